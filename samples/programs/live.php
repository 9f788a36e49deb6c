<?php
// The app behind /php/ (samples/axle.toml: a `fastcgi` source).
//
// Axle starts php-cgi workers once (a FastCGI socket on their fd 0) and
// sends every request under /php/ to one of them: no process is started
// per request. The request reaches the script as CGI variables
// (QUERY_STRING, PATH_INFO, ...) and, for a POST, as its input. What it
// prints is the source document, which then goes through its own
// xml-stylesheet PIs like a file would.
header('Content-Type: text/xml; charset=UTF-8');
$n = max(1, min(12, (int)($_GET['n'] ?? 7)));
$info = htmlspecialchars($_SERVER['PATH_INFO'] ?? '') ?: '(empty)';
$pid = getmypid();
$rows = '';
for ($i = 1; $i <= 10; $i++) {
    $rows .= "      <item>$i × $n = " . ($i * $n) . "</item>\n";
}
echo <<<XML
<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet href="/stylesheets/page.xsl" type="text/xsl"?>
<?xml-stylesheet href="/stylesheets/layout.xsl" type="text/xsl"?>
<page nav="dynamic">
  <title>Made by a PHP worker</title>
  <lead>This document was printed by <code>samples/programs/live.php</code>,
    run by a php-cgi worker that Axle started once and keeps
    (<code>PATH_INFO</code> was <code>$info</code>).</lead>
  <section id="table">
    <title>The $n times table</title>
    <list>
$rows    </list>
    <para>Try <link href="/php/table?n=9">?n=9</link> or
      <link href="/php/table?n=3">?n=3</link>.</para>
  </section>
</page>

XML;
