<?php
/*
 * The PHP front of the dynamic-front scenario (benches/load/run.sh): the
 * same document as gen/front.c, written by a PHP script, so the cost of a
 * PHP front can be measured the two ways Axle can run it: FastCGI workers
 * (a `fastcgi` source, `php-cgi` spawned and kept) and one process per
 * request (a `command` source running `php-cgi` on the script).
 *
 * Copied into the site's document root as live.php, next to articles/.
 * PATH_INFO selects what it writes:
 *
 *   /repeat.xml   articles/xml-pipelines.xml as it is: the same bytes on
 *                 every request.
 *   /change.xml   the article with " (TOKEN)" inserted before its first
 *                 "</title>" (every stage's output changes with it).
 *                 TOKEN is the query's `token=` value when it is made of
 *                 letters, digits, '-' and '.' (for the body checks, which
 *                 need fixed bytes), else the time in nanoseconds and the
 *                 process ID, different on every request.
 *
 * The bytes are those gen/front.c writes for the same token. Anything else:
 * status 404 and a line on stderr (exit status 2 when run one-shot).
 */

function fail(int $status, string $why): void
{
    http_response_code($status);
    error_log("live.php: $why");
    exit(2);
}

$path = $_SERVER['PATH_INFO'] ?? getenv('PATH_INFO');
if ($path === '/repeat.xml') {
    $change = false;
} elseif ($path === '/change.xml') {
    $change = true;
} else {
    fail(404, 'PATH_INFO is neither /repeat.xml nor /change.xml');
}
$doc = file_get_contents(__DIR__ . '/articles/xml-pipelines.xml');
if ($doc === false) {
    fail(500, 'cannot read the document');
}
if ($change) {
    $query = [];
    parse_str((string) ($_SERVER['QUERY_STRING'] ?? getenv('QUERY_STRING')), $query);
    $token = $query['token'] ?? null;
    if (!is_string($token) || !preg_match('/^[A-Za-z0-9.-]+$/', $token)) {
        $token = hrtime(true) . '-' . getmypid();
    }
    $at = strpos($doc, '</title>');
    if ($at === false) {
        fail(500, 'the document has no </title>');
    }
    $doc = substr($doc, 0, $at) . " ($token)" . substr($doc, $at);
}
header('Content-Type: application/xml');
echo $doc;
