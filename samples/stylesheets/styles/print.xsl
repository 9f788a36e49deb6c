<?xml version="1.0" encoding="UTF-8"?>
<!--
  styles/print.xsl: the alternate style "print" of /styles/
  (title="print" alternate="yes": used only when a request names it).

  A page meant for paper: no header bar, no navigation, no table of
  contents, no site.css; a serif font, black on white, and the address of
  every link written out after its text, since paper cannot be clicked.

  It imports layout.xsl for the block rules (sections, lists, pre, notes)
  and common.xsl's inline rules, and replaces the page frame, the table
  of contents and the link rule.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="../layout.xsl"/>

  <xsl:template match="page">
    <html>
      <xsl:attribute name="lang">
        <xsl:choose>
          <xsl:when test="@lang"><xsl:value-of select="@lang"/></xsl:when>
          <xsl:otherwise>en</xsl:otherwise>
        </xsl:choose>
      </xsl:attribute>
      <head>
        <title><xsl:value-of select="normalize-space(title)"/> (print)</title>
        <style>
          body { margin: 2cm auto; max-width: 40em; padding: 0 1em;
                 background: #fff; color: #000;
                 font: 11pt/1.5 "Times New Roman", Times, Georgia, serif; }
          h1, h2, h3, h4, h5, h6 { font-family: inherit; color: #000; page-break-after: avoid; }
          h1 { font-size: 20pt; margin: 0 0 0.3em; }
          h2 { font-size: 14pt; border-bottom: 1px solid #000; }
          a { color: #000; text-decoration: none; }
          .url { font-size: 9pt; }
          pre, code, kbd { font-family: "Courier New", Courier, monospace; font-size: 9.5pt; }
          pre { border: 1px solid #000; padding: 0.5em; white-space: pre-wrap; page-break-inside: avoid; }
          .note { border: 1px solid #000; padding: 0 0.8em; }
          .printed { border-top: 1px solid #000; margin-top: 2em; font-size: 9pt; }
        </style>
      </head>
      <body>
        <p class="printed"><xsl:value-of select="$site-name"/>
          <xsl:text> · style: print (alternate, chosen by the request)</xsl:text></p>
        <h1><xsl:apply-templates select="title/node()"/></h1>
        <xsl:apply-templates select="subtitle | byline | lead"/>
        <xsl:apply-templates select="*[not(self::title or self::subtitle or self::byline or self::lead)]"/>
        <p class="printed">Printed from <xsl:value-of select="$site-name"/>:
          page.xsl (persistent) then styles/print.xsl. Links are written as
          text [address].</p>
      </body>
    </html>
  </xsl:template>

  <!-- A table of contents is navigation: not on paper. -->
  <xsl:template match="toc"/>

  <!-- The link's text, then its address in brackets. -->
  <xsl:template match="link">
    <xsl:apply-imports/>
    <xsl:if test="node()">
      <span class="url">
        <xsl:text> [</xsl:text>
        <xsl:value-of select="@href"/>
        <xsl:text>]</xsl:text>
      </span>
    </xsl:if>
  </xsl:template>

</xsl:stylesheet>
