<?xml version="1.0" encoding="UTF-8"?>
<!-- step3.xsl: the last step. Maps the tiny <doc> vocabulary straight to
     HTML in the site's look (its stylesheet and header, no navigation),
     keeping the stage markers as data- attributes on <body>. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" media-type="text/html"
              doctype-system="about:legacy-compat" indent="no"/>
  <xsl:template match="/doc">
    <html lang="en">
      <head>
        <title><xsl:value-of select="title"/> · Axle samples</title>
        <link rel="stylesheet" href="/css/site.css"/>
      </head>
      <body data-step1="{@step1}" data-step2="{@step2}" data-step3="done">
        <header class="site-header"><div class="wrap"><a class="brand" href="/"><img src="/images/logo.svg" alt="" width="40" height="40"/><span class="brand-name">Axle</span></a></div></header>
        <main class="wrap"><xsl:apply-templates/></main>
      </body>
    </html>
  </xsl:template>
  <xsl:template match="title"><h1><xsl:apply-templates/></h1></xsl:template>
  <xsl:template match="para"><p><xsl:apply-templates/></p></xsl:template>
  <xsl:template match="link"><a href="{@href}"><xsl:apply-templates/></a></xsl:template>
</xsl:stylesheet>
