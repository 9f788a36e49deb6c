package AxleBench::Handler;
# A short mod_perl2 response handler that serves an XML file through the
# chain its <?xml-stylesheet?> PIs name, with XML::LibXSLT: AxKit's own stack
# (Apache + mod_perl + libxslt), modernised and cut down to what the load
# benchmark needs.
#
#   PerlSetVar AxleBenchCache On    keep finished responses in memory (per
#                                   child process), as AxKit's cache kept
#                                   them on disk
#
# Like AxKit's LibXSLT Language, compiled stylesheets are always reused
# (re-compiled when the stylesheet file's mtime/size changes). With the
# output cache on, a stored response is reused while the source and every
# stylesheet named by a PI are unchanged (one stat each per request, as
# AxKit checked them). Files a stylesheet imports are not tracked (AxKit did
# not track them either).
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::RequestUtil ();
use Apache2::Response ();
use Apache2::Log ();
use Apache2::Const -compile => qw(OK NOT_FOUND SERVER_ERROR);
use APR::Table ();
use File::Basename qw(dirname);
use XML::LibXML;
use XML::LibXSLT;

my $parser = XML::LibXML->new();
my $xslt   = XML::LibXSLT->new();
my %styles;    # stylesheet path => [stamp, compiled stylesheet]
my %cache;     # source path => {deps => [[path, stamp], ...], body, type}

my %XSLT_TYPES = map { $_ => 1 } qw(text/xsl application/xslt+xml text/xslt);

sub stamp {
    my @st = stat $_[0] or return undef;
    return "$st[9].$st[7].$st[1]";    # mtime, size, inode
}

sub stylesheet {
    my ($path) = @_;
    my $now = stamp($path) // die "missing stylesheet $path\n";
    my $e = $styles{$path};
    return $e->[1] if $e && $e->[0] eq $now;
    my $style = $xslt->parse_stylesheet($parser->parse_file($path));
    $styles{$path} = [$now, $style];
    return $style;
}

sub pseudo_attrs {
    my ($data) = @_;
    my %a;
    while ($data =~ /([A-Za-z_:][-\w.:]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g) {
        $a{$1} = defined $2 ? $2 : $3;
    }
    return \%a;
}

# The stylesheets named by the document's PIs, in order (AxKit's rules for
# the persistent chain: no title, not alternate, an XSLT type).
sub chain {
    my ($r, $doc, $file) = @_;
    my @chain;
    for my $n ($doc->childNodes) {
        last if $n->nodeType == XML_ELEMENT_NODE;
        next unless $n->nodeType == XML_PI_NODE && $n->nodeName eq 'xml-stylesheet';
        my $a = pseudo_attrs($n->nodeValue);
        my $type = $a->{type} // '';
        my $href = $a->{href} // next;
        next if ($a->{alternate} // '') eq 'yes' || defined $a->{title};
        next unless $XSLT_TYPES{$type}
            || (($type eq 'text/xml' || $type eq 'application/xml') && $href =~ /\.xslt?$/);
        my $path = $href =~ m{^/} ? $r->document_root . $href : dirname($file) . "/$href";
        push @chain, $path;
    }
    return @chain;
}

sub send_body {
    my ($r, $type, $body) = @_;
    $r->content_type($type);
    $r->set_content_length(length $body);
    $r->print($body) unless $r->header_only;
    return Apache2::Const::OK;
}

sub handler {
    my ($r) = @_;
    my $file = $r->filename;
    $file .= ($file =~ m{/$} ? '' : '/') . 'index.xml' if -d $file;
    return Apache2::Const::NOT_FOUND unless $file =~ /\.xml$/ && -f $file;

    my $use_cache = ($r->dir_config('AxleBenchCache') // '') eq 'On';
    if ($use_cache) {
        if (my $e = $cache{$file}) {
            my $fresh = 1;
            for my $d (@{ $e->{deps} }) {
                my $s = stamp($d->[0]);
                if (!defined $s || $s ne $d->[1]) { $fresh = 0; last }
            }
            return send_body($r, $e->{type}, $e->{body}) if $fresh;
        }
    }

    my ($body, $type, @deps);
    my $ok = eval {
        my $src_stamp = stamp($file);
        my $doc = $parser->parse_file($file);
        my @chain = chain($r, $doc, $file);
        @deps = ([$file, $src_stamp]);
        if (!@chain) {
            ($body, $type) = ($doc->toString, 'text/xml');
            return 1;
        }
        my ($cur, $style) = ($doc);
        for my $path (@chain) {
            $style = stylesheet($path);
            push @deps, [$path, $styles{$path}[0]];
            $cur = $style->transform($cur);
        }
        $body = $style->output_as_bytes($cur);
        $type = $style->media_type . '; charset=' . $style->output_encoding;
        1;
    };
    if (!$ok) {
        $r->log_error("AxleBench::Handler: $file: $@");
        return Apache2::Const::SERVER_ERROR;
    }
    $cache{$file} = { deps => \@deps, body => $body, type => $type } if $use_cache;
    return send_body($r, $type, $body);
}

1;
