<?xml version="1.0" encoding="UTF-8"?>
<!--
  article.xsl: stage 1 of the article chain (article.xsl, then layout.xsl).

  Turns the article vocabulary

    article @lang
      title, subtitle?, author, date, abstract,
      section* (title; para | list | example | aside | quote | section)*

  into the page vocabulary that layout.xsl understands: author and date
  become a byline, the abstract becomes the lead paragraph, a table of
  contents is built, <example> becomes <pre> and <aside> becomes <note>.
  Inline markup (em, code, link, ...) is shared by both vocabularies and
  is copied unchanged. Output is XML, for the next stage.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:include href="toc.xsl"/>

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <xsl:template match="/">
    <xsl:apply-templates select="article"/>
  </xsl:template>

  <xsl:template match="article">
    <page nav="articles">
      <xsl:copy-of select="@lang"/>
      <xsl:apply-templates select="title"/>
      <xsl:apply-templates select="subtitle"/>
      <xsl:if test="author or date">
        <byline>
          <xsl:apply-templates select="author | date"/>
        </byline>
      </xsl:if>
      <xsl:if test="abstract">
        <lead><xsl:apply-templates select="abstract/node()"/></lead>
      </xsl:if>
      <xsl:if test="count(section) &gt; 2">
        <xsl:call-template name="toc"/>
      </xsl:if>
      <xsl:apply-templates select="section"/>
      <para class="back"><link href="/articles/">All articles</link></para>
    </page>
  </xsl:template>

  <xsl:template match="section">
    <section>
      <xsl:attribute name="id"><xsl:apply-templates select="." mode="id"/></xsl:attribute>
      <xsl:apply-templates select="title"/>
      <xsl:apply-templates select="*[not(self::title)]"/>
    </section>
  </xsl:template>

  <xsl:template match="example">
    <pre><xsl:value-of select="."/></pre>
  </xsl:template>

  <xsl:template match="aside">
    <note><xsl:apply-templates/></note>
  </xsl:template>

  <!-- title, para, list, item, quote, author, date and inline markup -->
  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>

</xsl:stylesheet>
