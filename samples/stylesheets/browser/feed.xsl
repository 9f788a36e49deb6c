<?xml version="1.0" encoding="UTF-8"?>
<!--
  feed.xsl: an Atom feed as an HTML page, the kind of stylesheet a feed's
  xml-stylesheet PI names so that a browser shows something readable.
  It runs on the server now (browsers are dropping XSLT); feed readers
  still get the feed, because /browser/ negotiates.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
                xmlns:atom="http://www.w3.org/2005/Atom"
                exclude-result-prefixes="atom">

  <xsl:output method="html" encoding="UTF-8" doctype-system="about:legacy-compat"/>

  <xsl:template match="/atom:feed">
    <html lang="en">
      <head>
        <title><xsl:value-of select="atom:title"/></title>
        <link rel="stylesheet" href="/css/site.css"/>
        <link rel="alternate" type="application/atom+xml" href="{atom:link[@rel='self']/@href}"/>
      </head>
      <body>
        <main class="page">
          <h1><xsl:value-of select="atom:title"/></h1>
          <p class="lead"><xsl:value-of select="atom:subtitle"/></p>
          <aside class="note">
            <p>This is a feed. Your browser got it as a page; a feed reader
              asking for <code>application/atom+xml</code> gets the feed
              itself, from the same URL:</p>
            <pre>curl -H 'Accept: application/atom+xml' http://127.0.0.1:8080<xsl:value-of select="atom:link[@rel='self']/@href"/></pre>
          </aside>
          <xsl:apply-templates select="atom:entry"/>
          <p><a href="/browser/">Back to the page about browsers and XSLT</a></p>
        </main>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="atom:entry">
    <article>
      <h2><a href="{atom:link[@rel='alternate']/@href}"><xsl:value-of select="atom:title"/></a></h2>
      <p><time datetime="{atom:updated}"><xsl:value-of select="substring(atom:updated, 1, 10)"/></time></p>
      <p><xsl:value-of select="atom:summary"/></p>
    </article>
  </xsl:template>
</xsl:stylesheet>
