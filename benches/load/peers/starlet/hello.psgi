# The Starlet (PSGI) peer of the "hello" scenario: answers every request with
# the bytes of the file named by HELLO_BODY (the 128-byte body Axle produces
# for /hello/hello.xml), read once at start-up.
use strict;
use warnings;

my $file = $ENV{HELLO_BODY} or die "HELLO_BODY is not set\n";
open my $fh, '<:raw', $file or die "$file: $!\n";
my $body = do { local $/; <$fh> };
close $fh;
my $type = $ENV{HELLO_TYPE} || 'text/html; charset=UTF-8';
my @headers = ('Content-Type' => $type, 'Content-Length' => length $body);

sub { [200, [@headers], [$body]] };
