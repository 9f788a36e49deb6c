<?xml version="1.0" encoding="UTF-8"?>
<!--
  common.xsl: shared pieces imported by layout.xsl.

  It holds the site name and tagline, the rules for inline markup
  (em, strong, code, kbd, term, q, link, date) and the section-number
  helper. Because layout.xsl imports this file, editing it changes every
  HTML page: try changing $site-tagline and reload a page.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:variable name="site-name" select="'Axle samples'"/>
  <xsl:variable name="site-tagline" select="'XML in, stylesheets in between, HTML out.'"/>

  <!-- Inline markup shared by every vocabulary that reaches the layout. -->
  <xsl:template match="em"><em><xsl:apply-templates/></em></xsl:template>
  <xsl:template match="strong"><strong><xsl:apply-templates/></strong></xsl:template>
  <xsl:template match="code"><code><xsl:apply-templates/></code></xsl:template>
  <xsl:template match="kbd"><kbd><xsl:apply-templates/></kbd></xsl:template>
  <xsl:template match="term"><dfn><xsl:apply-templates/></dfn></xsl:template>
  <xsl:template match="q"><q><xsl:apply-templates/></q></xsl:template>

  <!-- <link href="/some/page.xml">text</link>; an empty link shows its href. -->
  <xsl:template match="link">
    <a href="{@href}">
      <xsl:choose>
        <xsl:when test="node()"><xsl:apply-templates/></xsl:when>
        <xsl:otherwise><xsl:value-of select="@href"/></xsl:otherwise>
      </xsl:choose>
    </a>
  </xsl:template>

  <!-- <date>2024-05-14</date> becomes <time datetime="2024-05-14">14 May 2024</time> -->
  <xsl:template match="date">
    <time datetime="{normalize-space(.)}">
      <xsl:call-template name="format-date">
        <xsl:with-param name="iso" select="normalize-space(.)"/>
      </xsl:call-template>
    </time>
  </xsl:template>

  <xsl:template name="format-date">
    <xsl:param name="iso"/>
    <xsl:variable name="m" select="number(substring($iso, 6, 2))"/>
    <xsl:choose>
      <xsl:when test="string-length($iso) = 10 and $m &gt;= 1 and $m &lt;= 12">
        <xsl:value-of select="number(substring($iso, 9, 2))"/>
        <xsl:text> </xsl:text>
        <xsl:value-of select="substring('JanFebMarAprMayJunJulAugSepOctNovDec', ($m - 1) * 3 + 1, 3)"/>
        <xsl:text> </xsl:text>
        <xsl:value-of select="substring($iso, 1, 4)"/>
      </xsl:when>
      <xsl:otherwise><xsl:value-of select="$iso"/></xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- Writes "1.2 " before a heading when the title carries number="1.2"
       (added by the custom numbering Language, see /custom/numbered.xml). -->
  <xsl:template name="section-number">
    <xsl:param name="number" select="@number"/>
    <xsl:if test="string($number) != ''">
      <span class="secnum"><xsl:value-of select="$number"/></span>
      <xsl:text> </xsl:text>
    </xsl:if>
  </xsl:template>

</xsl:stylesheet>
