<?xml version="1.0" encoding="UTF-8"?>
<!--
  atom.xsl: renders the small <news> vocabulary of /formats/feed.xml as an
  Atom 1.0 feed. The media-type on xsl:output becomes the response's
  Content-Type: application/atom+xml.

    news @id @updated
      title, subtitle?, author, item* (item @id @updated @href; title, summary)
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
                xmlns="http://www.w3.org/2005/Atom">

  <xsl:output method="xml" encoding="UTF-8" indent="yes"
              media-type="application/atom+xml"/>

  <xsl:template match="/">
    <xsl:apply-templates select="news"/>
  </xsl:template>

  <xsl:template match="news">
    <feed>
      <id><xsl:value-of select="@id"/></id>
      <title><xsl:value-of select="title"/></title>
      <xsl:if test="subtitle">
        <subtitle><xsl:value-of select="subtitle"/></subtitle>
      </xsl:if>
      <updated><xsl:value-of select="@updated"/></updated>
      <author><name><xsl:value-of select="author"/></name></author>
      <link rel="self" type="application/atom+xml" href="/formats/feed.xml"/>
      <link rel="alternate" type="text/html" href="/"/>
      <xsl:apply-templates select="item"/>
    </feed>
  </xsl:template>

  <xsl:template match="item">
    <entry>
      <id><xsl:value-of select="@id"/></id>
      <title><xsl:value-of select="title"/></title>
      <updated><xsl:value-of select="@updated"/></updated>
      <link rel="alternate" type="text/html" href="{@href}"/>
      <summary type="text"><xsl:value-of select="normalize-space(summary)"/></summary>
    </entry>
  </xsl:template>

</xsl:stylesheet>
