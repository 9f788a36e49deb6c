<?xml version="1.0" encoding="UTF-8"?>
<!--
  styles/handheld.xsl: the alternate style "handheld" of /styles/
  (title="handheld" alternate="yes" media="handheld").

  A minimal one-column page for small screens: no logo, no navigation bar,
  no table of contents, no external stylesheet, a few lines of inline CSS.

  It can be the whole chain. The persistent PI of /styles/ has no media
  attribute, which means media="screen", so for the handheld media AxKit's
  rules leave it out and this stylesheet reads the page as written,
  without page.xsl's section ids and table of contents (it shows no
  table of contents anyway). The box under the title says which of the
  two happened. Block rules come from layout.xsl; inline rules from
  common.xsl.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="../layout.xsl"/>

  <xsl:template match="page">
    <html lang="en">
      <head>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title><xsl:value-of select="normalize-space(title)"/></title>
        <style>
          body { margin: 0; padding: 0.5em; font: 100%/1.4 sans-serif; max-width: 100%; }
          h1 { font-size: 1.3em; margin: 0.2em 0; }
          h2 { font-size: 1.1em; margin: 1em 0 0.2em; }
          h3, h4, h5, h6 { font-size: 1em; }
          pre { white-space: pre-wrap; word-break: break-all; font-size: 0.85em; }
          ul, ol { padding-left: 1.2em; }
          .chain { font-size: 0.85em; border: 1px dashed #888; padding: 0.3em; }
        </style>
      </head>
      <body>
        <h1><xsl:apply-templates select="title/node()"/></h1>
        <p class="chain">
          <xsl:text>Style: handheld. Chain: </xsl:text>
          <xsl:choose>
            <!-- page.xsl consumes @toc; still there means it did not run. -->
            <xsl:when test="@toc">styles/handheld.xsl alone (the persistent page.xsl PI is for screen only).</xsl:when>
            <xsl:otherwise>page.xsl then styles/handheld.xsl.</xsl:otherwise>
          </xsl:choose>
        </p>
        <xsl:apply-templates select="subtitle | byline | lead"/>
        <xsl:apply-templates select="*[not(self::title or self::subtitle or self::byline or self::lead)]"/>
        <p><a href="/">Home</a></p>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="toc"/>

</xsl:stylesheet>
