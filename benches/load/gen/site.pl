#!/usr/bin/env perl
# Generates the documents of the "site" scenario: N small articles, each
# with the sample site's two-stage chain (article.xsl, then layout.xsl),
# as DIR/site/DDD/NNNNNN.xml with DDD = int(i / 1000), so a directory
# holds at most 1,000 files. Deterministic: the same N gives the same files.
#
#   perl gen/site.pl DIR N
use strict;
use warnings;
use File::Path qw(make_path);

my ($dir, $n) = @ARGV;
die "usage: site.pl DIR N\n" unless defined $n && $n =~ /^\d+$/;

my @words = qw(pipeline stylesheet cache document transform stage chain
    server request response content hash layout article section source
    output markup template node tree parser serializer header footer);

sub sentence {
    my ($seed, $len) = @_;
    my @w;
    for my $k (0 .. $len - 1) {
        $seed = ($seed * 1103515245 + 12345) % 2147483648;
        push @w, $words[($seed >> 8) % @words];
    }
    return (ucfirst join ' ', @w) . '.';
}

for my $i (0 .. $n - 1) {
    my $sub = sprintf '%s/site/%03d', $dir, int($i / 1000);
    make_path($sub) unless -d $sub;
    my $file = sprintf '%s/%06d.xml', $sub, $i;
    my $date = sprintf '2026-%02d-%02d', 1 + $i % 12, 1 + $i % 28;
    my @sections;
    for my $s (1 .. 3) {
        my $title = sentence($i * 7 + $s, 3);
        $title =~ s/\.$//;
        push @sections, sprintf "  <section>\n    <title>%s</title>\n    <para>%s %s</para>\n  </section>\n",
            $title, sentence($i * 13 + $s, 12), sentence($i * 17 + $s, 9);
    }
    open my $fh, '>', $file or die "$file: $!\n";
    print $fh <<"XML";
<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet href="/stylesheets/article.xsl" type="text/xsl"?>
<?xml-stylesheet href="/stylesheets/layout.xsl" type="text/xsl"?>
<article lang="en">
  <title>Generated document $i</title>
  <author>The load benchmark</author>
  <date>$date</date>
  <abstract>@{[ sentence($i, 10) ]}</abstract>
@{[ join '', @sections ]}</article>
XML
    close $fh or die "$file: $!\n";
}
