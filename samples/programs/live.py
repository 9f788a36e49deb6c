#!/usr/bin/env python3
"""The program behind /live/ (samples/axle.toml: a `command` source).

Axle runs it for every request under /live/, in the document root, with a
cleared environment: the request reaches it only as CGI-style variables
(REQUEST_METHOD, QUERY_STRING, PATH_INFO, HTTP_ACCEPT_LANGUAGE, ...).
Whatever it prints on stdout is the source document, which then goes
through its own xml-stylesheet PIs like a file would.

The output depends only on the request, so asking twice gives the same
bytes: in incremental mode the stylesheets after it are then reused.
"""
import os
import sys
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

path_info = os.environ.get("PATH_INFO", "")
query = parse_qs(os.environ.get("QUERY_STRING", ""))
try:
    n = max(1, min(12, int(query.get("n", ["7"])[0])))
except ValueError:
    n = 7

rows = "\n".join(
    f"      <item>{i} × {n} = {i * n}</item>" for i in range(1, 11)
)
sys.stdout.write(f"""<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet href="/stylesheets/page.xsl" type="text/xsl"?>
<?xml-stylesheet href="/stylesheets/layout.xsl" type="text/xsl"?>
<page nav="dynamic">
  <title>Made by a program</title>
  <lead>This document was printed by <code>samples/programs/live.py</code>
    for this request. Axle ran it with <code>PATH_INFO</code> set to
    <code>{escape(path_info) or "(empty)"}</code> and
    <code>QUERY_STRING</code> set to
    <code>{escape(os.environ.get("QUERY_STRING", "")) or "(empty)"}</code>,
    then sent its output through <code>page.xsl</code> and
    <code>layout.xsl</code>.</lead>
  <section id="table">
    <title>The {n} times table</title>
    <list>
{rows}
    </list>
    <para>Try <link href="/live/table?n=9">?n=9</link> or
      <link href="/live/table?n=3">?n=3</link>.</para>
  </section>
  <section id="cache">
    <title>What the cache does</title>
    <para>The program runs for every request (its <code>cache</code> is
      <code>"none"</code>). Look at the <code>X-Axle-Cache</code> header of
      two requests for the same URL:</para>
    <pre>curl -s -o /dev/null -D - 'http://127.0.0.1:8080/live/table?n=9' | grep -i x-axle-cache</pre>
    <para>With <kbd>--cache incremental</kbd> (the default) the second
      answer is <code>partial 2/2</code>: the program ran again, printed
      the same bytes, and both stylesheet stages were reused. With
      <kbd>--cache all</kbd> it is <code>uncacheable</code>: the finished
      page of a source made per request cannot be stored, so the whole
      chain runs every time.</para>
  </section>
</page>
""")
