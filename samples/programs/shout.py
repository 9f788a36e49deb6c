#!/usr/bin/env python3
"""A filter Language (samples/axle.toml: [filter."application/x-shout"]).

A stage of type application/x-shout runs this program: the stage's input
arrives on stdin, and what it prints on stdout is the stage's output. It
upper-cases the text of every <title> element and leaves the rest as it
is. Only the standard library: the document is parsed and written back
with xml.dom.minidom.
"""
import sys
from xml.dom import minidom

doc = minidom.parse(sys.stdin.buffer)
for title in doc.getElementsByTagName("title"):
    for node in title.childNodes:
        if node.nodeType == node.TEXT_NODE:
            node.data = node.data.upper()
sys.stdout.buffer.write(doc.toxml(encoding="UTF-8"))
