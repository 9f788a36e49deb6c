#!/usr/bin/env perl
# Helpers for benches/load/run.sh (Perl with core modules only, since Perl
# is needed anyway for the mod_perl and Starlet peers).
#
#   bench.pl free-port                      a free TCP port on 127.0.0.1
#   bench.pl snapshot CPU_S CPU_C PID...    CPU counters: busy/steal/total
#                                           ticks of CPUs CPU_S and CPU_C,
#                                           and the CPU ticks used so far by
#                                           the process trees of PID...
#   bench.pl ticks PID...                   the CPU ticks used so far by the
#                                           process trees of PID...
#   bench.pl client OUT CMD...              run CMD with stdout to OUT, print
#                                           "EXIT_STATUS CPU_SECONDS"
#   bench.pl rewrite TEMPLATE TARGET SECONDS COUNTFILE
#                                           every SECONDS, write TEMPLATE with
#                                           @REV@ replaced by a counter to a
#                                           temporary file and rename it over
#                                           TARGET; on SIGTERM write the count
#                                           to COUNTFILE and exit
#   bench.pl add RESULTS key=value... [key:=JSON...] [wrk=FILE]
#                                           append one JSON object (a line) to
#                                           RESULTS; wrk=FILE merges the
#                                           BENCHJSON line of a wrk output
#   bench.pl hyperfine RESULTS FILE key=value...
#                                           append a row made from a
#                                           hyperfine --export-json FILE
#   bench.pl report RESULTS OUT_JSON OUT_MD print the markdown report and
#                                           write the JSON file
use strict;
use warnings;
use JSON::PP ();
use POSIX ();
use Time::HiRes ();

my $JSON = JSON::PP->new->canonical(1);

my %commands = (
    'free-port' => \&free_port,
    snapshot    => \&snapshot,
    ticks       => sub { print tree_ticks(@_), "\n" },
    client      => \&client,
    rewrite     => \&rewrite,
    add         => \&add,
    hyperfine   => \&hyperfine,
    report      => \&report,
);
my $cmd = shift @ARGV // '';
my $fn = $commands{$cmd} or die "bench.pl: unknown command '$cmd'\n";
$fn->(@ARGV);
exit 0;

# ---------------------------------------------------------------------------

sub free_port {
    require IO::Socket::INET;
    my $s = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 1,
    ) or die "bench.pl: cannot bind: $!\n";
    print $s->sockport, "\n";
}

sub read_file {
    my ($path) = @_;
    open my $fh, '<', $path or return undef;
    local $/;
    my $s = <$fh>;
    close $fh;
    return $s;
}

sub cpu_counters {
    my ($cpu) = @_;
    my $stat = read_file('/proc/stat') // die "no /proc/stat\n";
    my ($line) = $stat =~ /^cpu$cpu (.*)$/m or die "bench.pl: no cpu$cpu in /proc/stat\n";
    my ($user, $nice, $system, $idle, $iowait, $irq, $softirq, $steal) = split ' ', $line;
    $steal //= 0;
    my $busy = $user + $nice + $system;
    my $total = $user + $nice + $system + $idle + $iowait + $irq + $softirq + $steal;
    return ($busy, $steal, $total);
}

sub tree_ticks {
    my @roots = @_;
    my (%parent, %ticks);
    opendir my $dh, '/proc' or die "no /proc\n";
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        my $s = read_file("/proc/$pid/stat") // next;
        my $rest = substr $s, rindex($s, ')') + 2;
        my @f = split ' ', $rest;    # $f[0] is field 3 (state)
        $parent{$pid} = $f[1];
        $ticks{$pid} = $f[11] + $f[12] + $f[13] + $f[14];    # utime stime cutime cstime
    }
    closedir $dh;
    my %children;
    push @{ $children{ $parent{$_} } }, $_ for keys %parent;
    my ($sum, @todo, %seen) = (0, grep { exists $ticks{$_} } @roots);
    while (defined(my $p = shift @todo)) {
        next if $seen{$p}++;
        $sum += $ticks{$p};
        push @todo, @{ $children{$p} || [] };
    }
    return $sum;
}

sub snapshot {
    my ($cpu_s, $cpu_c, @pids) = @_;
    print join(' ', cpu_counters($cpu_s), cpu_counters($cpu_c), tree_ticks(@pids),
        sprintf('%.6f', Time::HiRes::time())), "\n";
}

sub client {
    my ($out, @cmd) = @_;
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>', $out or die "$out: $!\n";
        exec @cmd or die "exec $cmd[0]: $!\n";
    }
    waitpid $pid, 0;
    my $status = $? >> 8;
    my (undef, undef, $cu, $cs) = times;
    printf "%d %.2f\n", $status, $cu + $cs;
}

sub rewrite {
    my ($template, $target, $interval, $countfile) = @_;
    my $text = read_file($template) // die "$template: $!\n";
    my $n = 0;
    my $stop = 0;
    $SIG{TERM} = $SIG{INT} = sub { $stop = 1 };
    my $tmp = "$target.tmp.$$";
    my $next = Time::HiRes::time();
    while (!$stop) {
        $n++;
        (my $body = $text) =~ s/\@REV\@/$n/g;
        open my $fh, '>', $tmp or die "$tmp: $!\n";
        print $fh $body;
        close $fh or die "$tmp: $!\n";
        rename $tmp, $target or die "rename $tmp: $!\n";
        $next += $interval;
        my $wait = $next - Time::HiRes::time();
        Time::HiRes::sleep($wait) if $wait > 0 && !$stop;
    }
    if (open my $fh, '>', $countfile) {
        print $fh "$n\n";
        close $fh;
    }
}

sub typed {
    my ($v) = @_;
    return $v =~ /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$/ ? $v + 0 : $v;
}

sub parse_pairs {
    my ($rec, @pairs) = @_;
    for my $kv (@pairs) {
        if ($kv =~ /^([\w.-]+):=(.*)$/s) {
            $rec->{$1} = $JSON->decode($2);
        } elsif ($kv =~ /^([\w.-]+)=(.*)$/s) {
            $rec->{$1} = typed($2);
        } else {
            die "bench.pl: not key=value: '$kv'\n";
        }
    }
}

sub append {
    my ($results, $rec) = @_;
    open my $fh, '>>', $results or die "$results: $!\n";
    print $fh $JSON->encode($rec), "\n";
    close $fh;
}

sub add {
    my ($results, @pairs) = @_;
    my %rec;
    parse_pairs(\%rec, @pairs);
    if (defined(my $wrk = delete $rec{wrk})) {
        my $text = read_file($wrk) // die "$wrk: $!\n";
        my ($json) = $text =~ /^BENCHJSON (\{.*\})\s*$/m
            or die "bench.pl: no BENCHJSON line in $wrk\n";
        my $w = $JSON->decode($json);
        my $secs = $w->{duration_us} / 1e6;
        my $lat = $w->{latency_us};
        my $e = $w->{errors};
        %rec = (
            %rec,
            requests         => $w->{requests},
            duration_s       => 0 + sprintf('%.3f', $secs),
            requests_per_sec => 0 + sprintf('%.1f', $secs > 0 ? $w->{requests} / $secs : 0),
            bytes            => $w->{bytes},
            errors           => $e,
            errors_total     => $e->{connect} + $e->{read} + $e->{write} + $e->{status} + $e->{timeout},
            (map { ("${_}_ms" => 0 + sprintf('%.3f', $lat->{$_} / 1000)) } qw(p50 p90 p99 p999 max mean)),
        );
        if ($w->{cache_counts}) {
            $rec{cache_counts} = $w->{cache_counts};
            $rec{responses_counted} = $w->{responses_counted};
            $rec{body_bytes} = $w->{body_bytes};
        }
    }
    append($results, \%rec);
}

sub hyperfine {
    my ($results, $file, @pairs) = @_;
    my $h = $JSON->decode(read_file($file) // die "$file: $!\n");
    my $r = $h->{results}[0];
    my %rec = (
        runs             => scalar @{ $r->{times} },
        mean_ms          => 0 + sprintf('%.3f', $r->{mean} * 1000),
        stddev_ms        => 0 + sprintf('%.3f', ($r->{stddev} // 0) * 1000),
        p50_ms           => 0 + sprintf('%.3f', $r->{median} * 1000),
        max_ms           => 0 + sprintf('%.3f', $r->{max} * 1000),
        min_ms           => 0 + sprintf('%.3f', $r->{min} * 1000),
        requests_per_sec => 0 + sprintf('%.2f', 1 / $r->{mean}),
        command          => $r->{command},
        errors_total     => 0,
    );
    parse_pairs(\%rec, @pairs);
    append($results, \%rec);
}

# --- report -------------------------------------------------------------------

sub fmt_int {
    my ($n) = @_;
    return '–' unless defined $n;
    my $s = sprintf '%.0f', $n;
    1 while $s =~ s/^(-?\d+)(\d{3})/$1,$2/;
    return $s;
}

sub fmt_ms {
    my ($v) = @_;
    return '–' unless defined $v;
    return sprintf('%.2f', $v) if $v < 10;
    return sprintf('%.1f', $v) if $v < 100;
    return fmt_int($v);
}

sub pct { defined $_[0] ? sprintf('%.0f%%', $_[0]) : '–' }

sub median {
    my @s = sort { $a <=> $b } grep { defined } @_;
    return undef unless @s;
    return @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2;
}

sub cache_text {
    my ($r) = @_;
    if (my $c = $r->{cache_counts}) {
        my $n = 0;
        $n += $_ for values %$c;
        return '–' unless $n;
        my @parts = map {
                my $p = 100 * $c->{$_} / $n;
                sprintf('%s %s (%s%%)', $_, fmt_int($c->{$_}), $p >= 99.95 || $p < 0.05 ? sprintf('%.2f', $p) : sprintf('%.1f', $p))
            }
            sort { $c->{$b} <=> $c->{$a} || $a cmp $b } keys %$c;
        return join(', ', @parts);
    }
    return (defined $r->{cache_status} && $r->{cache_status} ne '') ? $r->{cache_status} : '–';
}

sub errors_text {
    my ($r) = @_;
    return fmt_int($r->{errors_total} // 0) unless $r->{errors} && $r->{errors_total};
    my $e = $r->{errors};
    my @p = map { "$_ $e->{$_}" } grep { $e->{$_} } qw(connect read write timeout status);
    return fmt_int($r->{errors_total}) . ' (' . join(', ', @p) . ')';
}

sub report {
    my ($results, $out_json, $out_md) = @_;
    my @recs;
    open my $fh, '<', $results or die "$results: $!\n";
    while (my $line = <$fh>) {
        next unless $line =~ /\S/;
        push @recs, $JSON->decode($line);
    }
    close $fh;
    my ($meta) = grep { $_->{type} eq 'meta' } @recs;
    $meta //= {};
    my @cells  = grep { $_->{type} eq 'cell' || $_->{type} eq 'xsltproc' } @recs;
    my @checks = grep { $_->{type} eq 'check' } @recs;
    my @busy   = grep { $_->{type} eq 'busy' } @recs;
    my @sites  = grep { $_->{type} eq 'site' } @recs;
    my @notes  = grep { $_->{type} eq 'note' } @recs;

    my @md;
    push @md, "### Axle against peers under load ($meta->{date})", '';
    push @md, "- Machine: $meta->{machine}.";
    push @md, "- Axle: git $meta->{git_commit}, `$meta->{axle_bin}`; $meta->{axle_workers}.";
    push @md, "- Peers: $meta->{software}.";
    push @md, "- Pinning: $meta->{pinning}.";
    push @md, "- Load: $meta->{load}.";
    if (@busy) {
        my @b = map { "$_->{when} $_->{busy_percent}%" } @busy;
        my ($max) = sort { $b <=> $a } map { $_->{busy_percent} } @busy;
        push @md, "- Other load on the machine (1 s samples of /proc/stat with every server idle): "
            . join(', ', @b) . "; load average $meta->{loadavg_before} before, $meta->{loadavg_after} after."
            . ($max > 10 ? " **The machine was busy (max $max%): the numbers are noisy.**" : '');
        push @md, "- Per cell, *other (srv/cli)* is the CPU time on the server's and the client's CPU that neither used (other processes, and kernel work not charged to them), as a percentage of that CPU.";
    }
    my $nck = @checks;
    my @bad = grep { $_->{result} ne 'identical' && $_->{result} ne 'normalised-identical' } @checks;
    my @norm = grep { $_->{result} eq 'normalised-identical' } @checks;
    push @md, sprintf("- Body checks before (and after) measuring: %d comparisons, %d byte-identical, %d identical after normalisation, %d FAILED%s.",
        $nck, $nck - @bad - @norm, scalar @norm, scalar @bad,
        @bad ? ': ' . join('; ', map { "$_->{scenario} $_->{target} $_->{url} ($_->{when}): $_->{result}" } @bad) : '');
    for my $n (@norm) {
        push @md, "  - normalised: $n->{scenario} $n->{target} $n->{url}: $n->{normalisation}";
    }
    push @md, "- $_->{text}" for @notes;
    push @md, '';
    push @md, '| scenario | target | conn | c | req/s | p50 ms | p99 ms | max ms | errors | X-Axle-Cache | server CPU | other (srv/cli) | notes |';
    push @md, '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |';
    for my $s (@sites) {
        my ($c) = grep { $_->{scenario} eq 'site' && $_->{case} eq $s->{mode} } @cells;
        next unless $c;
        $c->{notes} = sprintf('hit ratio %.1f%% (ideal K/N %.1f%%); peak RSS %.0f MiB; cache %.0f MiB, working set %.0f MiB',
            100 * $s->{hit_ratio}, 100 * $s->{ideal_hit_ratio}, $s->{rss_peak_kb} / 1024,
            $s->{cache_size_bytes} / 1048576, $s->{working_set_bytes} / 1048576);
    }
    my $noisy = sub {
        my ($r) = @_;
        return $r && (($r->{other_server_cpu_pct} // 0) >= 10 || ($r->{other_client_cpu_pct} // 0) >= 10);
    };
    for my $r (@cells) {
        if ($noisy->($r)) {
            $r->{noisy} = JSON::PP::true;
            $r->{notes} = join '; ', grep { defined && length } $r->{notes},
                'NOISY: other load took ≥ 10% of the server\'s or the client\'s CPU';
        }
    }
    for my $r (@cells) {
        my $other = defined $r->{other_server_cpu_pct}
            ? sprintf('%s / %s', pct($r->{other_server_cpu_pct}), pct($r->{other_client_cpu_pct}))
            : '–';
        push @md, sprintf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
            "$r->{scenario} ($r->{case})", $r->{target}, $r->{conn} // '–', $r->{connections} // '–',
            fmt_int($r->{requests_per_sec}), fmt_ms($r->{p50_ms}), fmt_ms($r->{p99_ms}), fmt_ms($r->{max_ms}),
            errors_text($r), cache_text($r), pct($r->{server_cpu_pct}), $other, $r->{notes} // '';
    }

    # --- targets ---
    my $find = sub {
        my (%k) = @_;
        for my $r (@cells) {
            next if grep { ($r->{$_} // '') ne $k{$_} } keys %k;
            return $r;
        }
        return undef;
    };
    my @targets;
    my $ratio_target = sub {
        my ($name, $goal, $a, $b, $what) = @_;
        my %t = (target => $name, goal => $goal, measure => $what);
        if ($a && $b && $b->{requests_per_sec}) {
            $t{value} = 0 + sprintf('%.3f', $a->{requests_per_sec} / $b->{requests_per_sec});
            $t{measured} = sprintf('%.2f× (%s / %s req/s)', $t{value},
                fmt_int($a->{requests_per_sec}), fmt_int($b->{requests_per_sec}));
            if ($goal eq 'context') {
                $t{context} = JSON::PP::true;    # informational: neither met nor not met
            } else {
                my ($op, $g) = $goal =~ /^(≥|<=|≤|>=)\s*([\d.]+)/;
                $t{met} = $t{value} >= $g ? JSON::PP::true : JSON::PP::false;
            }
            if ($noisy->($a) || $noisy->($b)) {
                $t{noisy} = JSON::PP::true;
                $t{measured} .= ' (noisy cell)';
            }
        } else {
            $t{measured} = 'not run';
        }
        push @targets, \%t;
    };
    my %ka = (conn => 'keep-alive');
    # (doc hit ÷ nginx static: below, with the pairs)
    # Context, not a target: the same HTTP stack with nothing on top
    # (examples/hit_floor.rs) against nginx.
    $ratio_target->('floor of the stack: axum-floor ÷ nginx-static', 'context',
        $find->(scenario => 'doc', target => 'axum-floor', %ka),
        $find->(scenario => 'doc', target => 'nginx-static', %ka),
        'axum + tokio (current-thread) serving the bytes from memory with one stat per request ÷ nginx static, keep-alive');
    # (doc no-cache ÷ nginx-xslt: below, with the pairs)
    $ratio_target->('doc hit ≥ 4× mod_perl cached', '≥ 4',
        $find->(scenario => 'doc', target => 'axle-incremental', %ka),
        $find->(scenario => 'doc', target => 'modperl-cache', %ka),
        'Axle incremental (hit) ÷ mod_perl with its output cache, keep-alive');
    $ratio_target->('trivial hit ≥ 20× Axle no-cache', '≥ 20',
        $find->(scenario => 'trivial', target => 'axle-incremental', %ka),
        $find->(scenario => 'trivial', target => 'axle-off', %ka),
        'Axle incremental (hit) ÷ Axle off, keep-alive');
    # The pairs scenario: back-to-back rounds of two targets; the median of
    # the per-round ratios A ÷ B (undef when that pair was not run).
    # (The shared scenario's rounds the same way: $by_round->('shared', ...).)
    my $by_round = sub {
        my ($scen, $case, $ta, $tb) = @_;
        my @ratios;
        for my $r (grep { $_->{scenario} eq $scen && $_->{case} eq $case && $_->{target} eq $ta } @cells) {
            my ($o) = grep { $_->{scenario} eq $scen && $_->{case} eq $case && $_->{target} eq $tb
                             && ($_->{round} // '') eq ($r->{round} // '') } @cells;
            push @ratios, $r->{requests_per_sec} / $o->{requests_per_sec} if $o && $o->{requests_per_sec};
        }
        return undef unless @ratios;
        my @s = sort { $a <=> $b } @ratios;
        my $median = @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2;
        return { median => $median, ratios => \@ratios };
    };
    my $paired = sub { $by_round->('pairs', @_) };
    # A target from a pair when it was run (the single cells' ratio beside
    # it), else from the single cells.
    my $pair_target = sub {
        my ($name, $goal, $case, $ta, $tb, $single_a, $single_b, $what) = @_;
        my $p = $paired->($case, $ta, $tb);
        if (!$p) {
            $ratio_target->($name, $goal, $single_a, $single_b, $what);
            return;
        }
        my ($g) = $goal =~ /([\d.]+)/;
        my %t = (target => $name, goal => $goal, measure => "median over interleaved rounds (pairs scenario) of $what");
        $t{value} = 0 + sprintf('%.3f', $p->{median});
        $t{rounds} = [map { 0 + sprintf('%.3f', $_) } @{ $p->{ratios} }];
        $t{measured} = sprintf('%.2f× (median of %d interleaved rounds: %s)', $p->{median}, scalar @{ $p->{ratios} },
            join(', ', map { sprintf '%.2f', $_ } @{ $p->{ratios} }));
        if ($single_a && $single_b && $single_b->{requests_per_sec}) {
            $t{measured} .= sprintf('; single cells %.2f×', $single_a->{requests_per_sec} / $single_b->{requests_per_sec});
        }
        $t{met} = $p->{median} >= $g ? JSON::PP::true : JSON::PP::false;
        push @targets, \%t;
    };
    $pair_target->('doc hit ≥ 1.2× nginx static', '≥ 1.2', 'doc-hit', 'axle-incremental', 'nginx-static',
        $find->(scenario => 'doc', target => 'axle-incremental', %ka),
        $find->(scenario => 'doc', target => 'nginx-static', %ka),
        'Axle incremental (hit) ÷ nginx static, keep-alive');
    $pair_target->('doc no-cache ≥ 1.2× nginx-xslt', '≥ 1.2', 'doc-nocache', 'axle-off', 'nginx-xslt',
        $find->(scenario => 'doc', target => 'axle-off', %ka),
        $find->(scenario => 'doc', target => 'nginx-xslt', %ka),
        'Axle off ÷ nginx XSLT filter, keep-alive');
    $pair_target->('trivial no-cache ≥ 1.2× nginx-xslt', '≥ 1.2', 'trivial-nocache', 'axle-off', 'nginx-xslt',
        $find->(scenario => 'trivial', target => 'axle-off', %ka),
        $find->(scenario => 'trivial', target => 'nginx-xslt', %ka),
        'Axle off ÷ nginx XSLT filter (the 3-stage trivial chain), keep-alive');
    # incremental ÷ all: from the shared scenario when it was run (the
    # interleaved rounds and single cells beside it), else as the others.
    my $aa = $by_round->('shared', 'doc-aa', 'axle-incremental', 'axle-incremental-2');
    if ($aa) {
        my @s = sort { $a <=> $b } @{ $aa->{ratios} };
        push @targets, {
            target   => 'shared-CPU method, A/A: two incremental servers (doc)',
            goal     => 'context',
            context  => JSON::PP::true,
            measure  => 'the shared scenario run on two servers of one mode: the spread of the method itself',
            value    => 0 + sprintf('%.3f', $aa->{median}),
            rounds   => [map { 0 + sprintf('%.3f', $_) } @{ $aa->{ratios} }],
            measured => sprintf('%.2f× (median of %d rounds, %.2f–%.2f)', $aa->{median}, scalar @s, $s[0], $s[-1]),
        };
    }
    for my $case ([doc => 'doc'], [trivial => 'trivial'], [hello => 'hello']) {
        my $name = "incremental ÷ all on the all-hit path ≥ 0.98 ($case->[1])";
        my @single = ($find->(scenario => $case->[0], target => 'axle-incremental', %ka),
            $find->(scenario => $case->[0], target => 'axle-all', %ka));
        my $sh = $by_round->('shared', $case->[0], 'axle-incremental', 'axle-all');
        if (!$sh) {
            $pair_target->($name, '≥ 0.98', $case->[0], 'axle-incremental', 'axle-all', @single,
                'Axle incremental ÷ Axle all, both all hits, keep-alive');
            next;
        }
        my %t = (target => $name, goal => '≥ 0.98',
            measure => 'median over rounds of the shared scenario (both servers loaded at once, sharing the server CPU) of Axle incremental ÷ Axle all, both all hits, keep-alive');
        $t{value} = 0 + sprintf('%.3f', $sh->{median});
        $t{rounds} = [map { 0 + sprintf('%.3f', $_) } @{ $sh->{ratios} }];
        $t{measured} = sprintf('%.2f× (median of %d rounds sharing the server CPU: %s)', $sh->{median},
            scalar @{ $sh->{ratios} }, join(', ', map { sprintf '%.2f', $_ } @{ $sh->{ratios} }));
        if (my $p = $paired->($case->[0], 'axle-incremental', 'axle-all')) {
            $t{measured} .= sprintf('; interleaved rounds %.2f×', $p->{median});
        }
        if ($single[0] && $single[1] && $single[1]{requests_per_sec}) {
            $t{measured} .= sprintf('; single cells %.2f×', $single[0]{requests_per_sec} / $single[1]{requests_per_sec});
        }
        $t{met} = $sh->{median} >= 0.98 ? JSON::PP::true : JSON::PP::false;
        push @targets, \%t;
    }
    for my $s (qw(churn dynamic)) {
        for my $case (qw(article docbook)) {
            my @args = ("$s: incremental ≥ 3× all ($case)", '≥ 3');
            my @single = ($find->(scenario => $s, case => $case, target => 'axle-incremental'),
                $find->(scenario => $s, case => $case, target => 'axle-all'),
                "Axle incremental ÷ Axle all, $s ($case)");
            # dynamic (article) is also measured in interleaved rounds
            if ("$s/$case" eq 'dynamic/article') {
                $pair_target->(@args, 'dynamic-article', 'axle-incremental', 'axle-all', @single);
            } else {
                $ratio_target->(@args, @single);
            }
        }
    }
    # dynamic-front: per group (source, output kind), the median over its
    # interleaved rounds of incremental ÷ all and all ÷ off, and a summary
    # table (below the cells) of each mode's median req/s, server CPU per
    # request and X-Axle-Cache counts over every round.
    my @front;
    my %source_of = (cmd => 'command', up => 'upstream', fcgi => 'FastCGI');
    for my $g (qw(cmd-repeat cmd-change up-repeat up-change fcgi-repeat fcgi-change)) {
        my @rows = grep { $_->{scenario} eq 'dynamic-front' && $_->{case} eq $g } @cells;
        next unless @rows;
        my ($src, $kind) = split /-/, $g;
        my $source = $source_of{$src};
        my %by_mode;
        for my $m (qw(off all incremental)) {
            my @r = grep { $_->{target} eq "axle-$m" } @rows;
            my (%counts, @rps, @us, @srv);
            for my $r (@r) {
                push @rps, $r->{requests_per_sec};
                push @srv, $r->{server_cpu_pct} if defined $r->{server_cpu_pct};
                push @us, 1e6 * $r->{server_cpu_pct} / 100 * $r->{duration_s} / $r->{requests}
                    if defined $r->{server_cpu_pct} && $r->{requests};
                my $c = $r->{cache_counts} || {};
                $counts{$_} += $c->{$_} for keys %$c;
            }
            $by_mode{$m} = { rps => median(@rps), us => median(@us), srv => median(@srv),
                cache => cache_text({ cache_counts => \%counts }), rounds => scalar @r };
        }
        my %row = (group => $g, source => $source, output => $kind, modes => \%by_mode);
        for my $pair ([qw(incremental all)], [qw(all off)]) {
            my $p = $by_round->('dynamic-front', $g, "axle-$pair->[0]", "axle-$pair->[1]") or next;
            my @s = sort { $a <=> $b } @{ $p->{ratios} };
            $row{"$pair->[0]_over_$pair->[1]"} = { median => 0 + sprintf('%.3f', $p->{median}),
                min => 0 + sprintf('%.3f', $s[0]), max => 0 + sprintf('%.3f', $s[-1]),
                rounds => [map { 0 + sprintf('%.3f', $_) } @{ $p->{ratios} }] };
        }
        push @front, \%row;
        my $spread = sub {
            my ($r) = @_;
            sprintf('%.2f× (median of %d interleaved rounds, %.2f–%.2f: %s)', $r->{median}, scalar @{ $r->{rounds} },
                $r->{min}, $r->{max}, join(', ', map { sprintf '%.2f', $_ } @{ $r->{rounds} }));
        };
        my $target = sub {
            my ($name, $goal, $r, $met, $what) = @_;
            my %t = (target => $name, goal => $goal, measure => "median over interleaved rounds (dynamic-front) of $what");
            if ($r) {
                $t{value} = $r->{median};
                $t{rounds} = $r->{rounds};
                $t{measured} = $spread->($r);
                if ($goal eq 'context') { $t{context} = JSON::PP::true } else { $t{met} = $met->($r->{median}) ? JSON::PP::true : JSON::PP::false }
            } else {
                $t{measured} = 'not run';
            }
            push @targets, \%t;
        };
        my ($ia, $ao) = ($row{incremental_over_all}, $row{all_over_off});
        if ($kind eq 'repeat') {
            $target->("dynamic-front ($source, output repeats): incremental ≥ 5× all", '≥ 5', $ia,
                sub { $_[0] >= 5 }, "Axle incremental ÷ Axle all, $source source, the same document every request");
            $target->("dynamic-front ($source, output repeats): all within 10% of off", '0.90–1.10', $ao,
                sub { $_[0] >= 0.90 && $_[0] <= 1.10 }, "Axle all ÷ Axle off, $source source, the same document every request");
        } else {
            $target->("dynamic-front ($source, output changes): incremental ≥ 0.98× all", '≥ 0.98', $ia,
                sub { $_[0] >= 0.98 }, "Axle incremental ÷ Axle all, $source source, a new document every request");
            $target->("dynamic-front ($source, output changes): all ÷ off", 'context', $ao,
                undef, "Axle all ÷ Axle off, $source source, a new document every request");
        }
    }

    # php-oneshot: the same PHP script through FastCGI workers and through
    # one php-cgi process per request (a command source), both --cache off.
    my @oneshot = grep { $_->{scenario} eq 'dynamic-front' && $_->{case} eq 'php-oneshot' } @cells;
    if (@oneshot) {
        my $fc = $by_round->('dynamic-front', 'php-oneshot', 'axle-off-fastcgi', 'axle-off-command');
        my %t = (target => 'dynamic-front: FastCGI ≥ 4× one-shot command (PHP, --cache off)', goal => '≥ 4',
            measure => 'median over interleaved rounds (dynamic-front, php-oneshot) of Axle off on live.php through a fastcgi source (php-cgi workers) ÷ the same through a command source (one php-cgi per request)');
        if ($fc) {
            my @s = sort { $a <=> $b } @{ $fc->{ratios} };
            $t{value} = 0 + sprintf('%.3f', $fc->{median});
            $t{rounds} = [map { 0 + sprintf('%.3f', $_) } @{ $fc->{ratios} }];
            $t{measured} = sprintf('%.2f× (median of %d interleaved rounds, %.2f–%.2f)', $fc->{median}, scalar @s, $s[0], $s[-1]);
            $t{met} = $fc->{median} >= 4 ? JSON::PP::true : JSON::PP::false;
        } else {
            $t{measured} = 'not run';
        }
        for my $who (qw(fastcgi command)) {
            my @r = grep { $_->{target} eq "axle-off-$who" } @oneshot;
            next unless @r;
            my @rps = map { $_->{requests_per_sec} } @r;
            my @us = map { 1e6 * $_->{server_cpu_pct} / 100 * $_->{duration_s} / $_->{requests} }
                grep { defined $_->{server_cpu_pct} && $_->{requests} } @r;
            $t{measured} .= sprintf('; %s median %s req/s, %s µs CPU / request', $who, fmt_int(median(@rps)),
                @us ? fmt_int(median(@us)) : '–');
        }
        push @targets, \%t;
    }

    for my $mode (qw(incremental all)) {
        my $r = $find->(scenario => 'c1000', target => "axle-$mode");
        my %t = (target => "c1000: 0 errors (axle $mode)", goal => '0', measure => 'wrk errors (connect, read, write, timeout, non-2xx)');
        if ($r) {
            $t{value} = $r->{errors_total};
            $t{measured} = errors_text($r);
            $t{met} = $r->{errors_total} == 0 ? JSON::PP::true : JSON::PP::false;
        } else { $t{measured} = 'not run' }
        push @targets, \%t;
        my %u = (target => "c1000: p99 ≤ 25 ms (axle $mode)", goal => '≤ 25', measure => 'p99 latency at 1,000 connections');
        if ($r) {
            $u{value} = $r->{p99_ms};
            $u{measured} = sprintf('%s ms (p50 %s, max %s; %s req/s)', fmt_ms($r->{p99_ms}), fmt_ms($r->{p50_ms}),
                fmt_ms($r->{max_ms}), fmt_int($r->{requests_per_sec}));
            $u{met} = $r->{p99_ms} <= 25 ? JSON::PP::true : JSON::PP::false;
        } else { $u{measured} = 'not run' }
        push @targets, \%u;
    }
    for my $conn (qw(keep-alive close)) {
        $ratio_target->("hello ≥ 1.0× Starlet ($conn)", '≥ 1.0',
            $find->(scenario => 'hello', target => 'axle-incremental', conn => $conn),
            $find->(scenario => 'hello', target => 'starlet', conn => $conn),
            "Axle incremental (hit) ÷ Starlet, $conn");
    }
    # Cache tiers (#25): the medians of per-round ratios of the compression
    # and disk-hit scenarios, and warm-restart's two single cells.
    my $round_target = sub {
        my ($name, $goal, $scen, $case, $ta, $tb, $what) = @_;
        my $p = $by_round->($scen, $case, $ta, $tb);
        my %t = (target => $name, goal => $goal, measure => "median over interleaved rounds ($scen) of $what");
        if (!$p) {
            $t{measured} = 'not run';
        } else {
            $t{value} = 0 + sprintf('%.3f', $p->{median});
            $t{rounds} = [map { 0 + sprintf('%.3f', $_) } @{ $p->{ratios} }];
            my @s = sort { $a <=> $b } @{ $p->{ratios} };
            $t{measured} = sprintf('%.2f× (median of %d rounds, %.2f–%.2f)', $p->{median}, scalar @s, $s[0], $s[-1]);
            if ($goal eq 'context') {
                $t{context} = JSON::PP::true;
            } else {
                my ($g) = $goal =~ /([\d.]+)/;
                $t{met} = $p->{median} >= $g ? JSON::PP::true : JSON::PP::false;
            }
        }
        push @targets, \%t;
    };
    $round_target->('compression: Axle gzip hit ≥ 0.9× plain hit', '≥ 0.9', 'compression', 'article', 'axle-gzip', 'axle-identity',
        'Axle gzip ÷ Axle identity (one server, the same page)');
    $round_target->('compression: Axle br hit ≥ 0.9× plain hit', '≥ 0.9', 'compression', 'article', 'axle-br', 'axle-identity',
        'Axle br ÷ Axle identity (one server, the same page)');
    $round_target->('compression: Axle gzip ÷ nginx gzip_static', 'context', 'compression', 'article', 'axle-gzip', 'nginx-gzip-static',
        'Axle gzip hit ÷ nginx gzip_static serving FILE.gz');
    $round_target->('compression: Axle identity ÷ nginx identity', 'context', 'compression', 'article', 'axle-identity', 'nginx-identity',
        'Axle plain hit ÷ nginx static file');
    $round_target->('compression: nginx gzip_static ÷ nginx identity', 'context', 'compression', 'article', 'nginx-gzip-static', 'nginx-identity',
        'nginx FILE.gz ÷ nginx FILE');
    $round_target->('disk-hit: disk-tier hit ÷ memory hit (req/s)', 'context', 'disk-hit', 'site', 'axle-disk', 'axle-memory',
        'Axle with a tiny memory tier and a disk tier ÷ Axle with every page in memory, uniform over the documents');
    # The CPU a request costs (the server's process tree's CPU time over the
    # cell ÷ its requests), disk-tier hit ÷ memory hit, per round.
    {
        my $us = sub {
            my ($r) = @_;
            return undef unless $r && defined $r->{server_cpu_pct} && $r->{requests} && $r->{duration_s};
            return 1e6 * $r->{server_cpu_pct} / 100 * $r->{duration_s} / $r->{requests};
        };
        my (@ratios, @ud, @um);
        for my $d (grep { $_->{scenario} eq 'disk-hit' && $_->{case} eq 'site' && $_->{target} eq 'axle-disk' } @cells) {
            my ($m) = grep { $_->{scenario} eq 'disk-hit' && $_->{case} eq 'site' && $_->{target} eq 'axle-memory'
                             && ($_->{round} // '') eq ($d->{round} // '') } @cells;
            my ($a, $b) = ($us->($d), $us->($m));
            next unless defined $a && defined $b && $b > 0;
            push @ratios, $a / $b;
            push @ud, $a;
            push @um, $b;
        }
        my %t = (target => 'disk-hit: CPU per disk-tier hit ≤ 3× per memory hit', goal => '≤ 3',
            measure => 'median over interleaved rounds (disk-hit) of the server\'s CPU time per request (its process tree\'s utime + stime over the cell ÷ requests), Axle with a tiny memory tier and a disk tier ÷ Axle with every page in memory');
        if (@ratios) {
            my $med = median(@ratios);
            my @s = sort { $a <=> $b } @ratios;
            $t{value} = 0 + sprintf('%.3f', $med);
            $t{rounds} = [map { 0 + sprintf('%.3f', $_) } @ratios];
            $t{measured} = sprintf('%.2f× (median of %d rounds, %.2f–%.2f; %s vs %s µs CPU / request)', $med, scalar @s,
                $s[0], $s[-1], fmt_ms(median(@ud)), fmt_ms(median(@um)));
            $t{met} = $med <= 3 ? JSON::PP::true : JSON::PP::false;
        } else {
            $t{measured} = 'not run';
        }
        push @targets, \%t;
    }
    $ratio_target->('warm-restart: warm ÷ cold, first seconds', 'context',
        $find->(scenario => 'warm-restart', target => 'axle-warm'),
        $find->(scenario => 'warm-restart', target => 'axle-cold'),
        'req/s over the first seconds after start-up: restarted on a filled disk tier ÷ a cold start without one');
    for my $s (@sites) {
        my $limit = 1.5 * $s->{cache_size_bytes} + 40 * 1024 * 1024;
        push @targets, {
            target   => "site: RSS ≤ 1.5× cache size + 40 MB (axle $s->{mode})",
            goal     => sprintf('≤ %.1f MiB', $limit / 1048576),
            measure  => 'peak RSS (VmHWM) of the server',
            value    => $s->{rss_peak_kb} * 1024,
            measured => sprintf('%.1f MiB (cache size %.0f MiB)', $s->{rss_peak_kb} / 1024, $s->{cache_size_bytes} / 1048576),
            met      => $s->{rss_peak_kb} * 1024 <= $limit ? JSON::PP::true : JSON::PP::false,
        };
        my $gap = 100 * ($s->{hit_ratio} - $s->{ideal_hit_ratio});
        push @targets, {
            target   => "site: hit ratio within 5 points of ideal (axle $s->{mode})",
            goal     => '|measured − ideal| ≤ 5 points',
            measure  => 'X-Axle-Cache: hit ÷ all responses; ideal = K/N',
            value    => 0 + sprintf('%.2f', $gap),
            measured => sprintf('%.1f%% vs ideal %.1f%% (%+.1f points; K = %s responses of %s B in %.0f MiB, N = %s)',
                100 * $s->{hit_ratio}, 100 * $s->{ideal_hit_ratio}, $gap, fmt_int($s->{ideal_k}),
                fmt_int($s->{avg_body_bytes}), $s->{cache_size_bytes} / 1048576, fmt_int($s->{documents})),
            met      => abs($gap) <= 5 ? JSON::PP::true : JSON::PP::false,
        };
    }

    if (@front) {
        push @md, '', '#### dynamic-front', '';
        push @md, 'Per group, each mode\'s median over its interleaved rounds: req/s, server CPU (% of one CPU, its process tree with the programs it ran) and that CPU time per request; the X-Axle-Cache values counted over every round; the per-round ratios\' median (min–max).', '';
        push @md, '| source | output | mode | rounds | req/s | server CPU | µs CPU / request | X-Axle-Cache | ratio |';
        push @md, '| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |';
        for my $row (@front) {
            for my $m (qw(off all incremental)) {
                my $b = $row->{modes}{$m};
                my $ratio = '';
                my $r = $m eq 'incremental' ? $row->{incremental_over_all} : $m eq 'all' ? $row->{all_over_off} : undef;
                $ratio = sprintf('%s %.2f× (%.2f–%.2f)', $m eq 'incremental' ? 'incremental ÷ all' : 'all ÷ off',
                    $r->{median}, $r->{min}, $r->{max}) if $r;
                push @md, sprintf('| %s | %s | %s | %d | %s | %s | %s | %s | %s |', $row->{source}, $row->{output}, $m,
                    $b->{rounds}, fmt_int($b->{rps}), pct($b->{srv}), fmt_int($b->{us}), $b->{cache}, $ratio);
            }
        }
    }
    push @md, '', '#### Targets', '';
    push @md, '| target | measured | met |', '| --- | --- | --- |';
    for my $t (@targets) {
        my $met = $t->{context} ? 'context' : !exists $t->{met} ? '–' : $t->{met} ? 'met' : '**not met**';
        push @md, "| $t->{target} | $t->{measured} | $met |";
    }
    push @md, '', "Results written to $out_json";
    my $md = join("\n", @md) . "\n";
    print $md;
    if ($out_md) {
        open my $m, '>', $out_md or die "$out_md: $!\n";
        print $m $md;
        close $m;
    }

    my %doc = (
        meta    => $meta,
        busy    => \@busy,
        checks  => \@checks,
        results => \@cells,
        site    => \@sites,
        notes   => [map { $_->{text} } @notes],
        targets => \@targets,
        (@front ? (dynamic_front => \@front) : ()),
    );
    delete $_->{type} for $meta, @cells, @checks, @busy, @sites;
    open my $j, '>', $out_json or die "$out_json: $!\n";
    print $j JSON::PP->new->canonical(1)->pretty->encode(\%doc);
    close $j;
}
