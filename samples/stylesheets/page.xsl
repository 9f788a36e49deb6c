<?xml version="1.0" encoding="UTF-8"?>
<!--
  page.xsl: the content stage for pages written in the page vocabulary
  (the home page, /custom/numbered.xml, /formats/index.xml, ...).

  Authors write <page>, <section>, <title>, <para> and inline markup.
  This stage copies all of it and adds what authors should not have to
  write by hand: an id on every section, and a table of contents when
  the page asks for one with toc="yes". Attributes added by earlier
  stages, such as title/@number from the numbering Language, are copied
  through untouched. Output is XML for the next stage, layout.xsl.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:include href="toc.xsl"/>

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <!-- Only the document element is processed: comments and
       xml-stylesheet instructions around it are dropped. -->
  <xsl:template match="/">
    <xsl:apply-templates select="*"/>
  </xsl:template>

  <xsl:template match="page">
    <page>
      <xsl:copy-of select="@*[name() != 'toc']"/>
      <xsl:apply-templates select="title | subtitle | byline | lead"/>
      <xsl:if test="@toc = 'yes'">
        <xsl:call-template name="toc"/>
      </xsl:if>
      <xsl:apply-templates select="node()[not(self::title or self::subtitle or self::byline or self::lead)]"/>
    </page>
  </xsl:template>

  <xsl:template match="section">
    <section>
      <xsl:copy-of select="@*"/>
      <xsl:attribute name="id"><xsl:apply-templates select="." mode="id"/></xsl:attribute>
      <xsl:apply-templates/>
    </section>
  </xsl:template>

  <!-- Everything else is copied as it is. -->
  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>

</xsl:stylesheet>
