<?xml version="1.0" encoding="UTF-8"?>
<!--
  listing.xsl: stage 1 of /articles/ (listing.xsl, then layout.xsl).

    listing @nav @base
      title, intro, entry* (entry @href: an article file, relative to the listing)

  For every entry it opens the article with document() and takes its
  title, author, date and abstract, so the list never goes out of date.
  Each document read this way is a dependency of the page: edit an
  article's title and the listing changes too.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <xsl:template match="/">
    <xsl:apply-templates select="listing"/>
  </xsl:template>

  <xsl:template match="listing">
    <page>
      <xsl:copy-of select="@nav"/>
      <xsl:copy-of select="title"/>
      <xsl:if test="intro">
        <lead><xsl:copy-of select="intro/node()"/></lead>
      </xsl:if>
      <xsl:apply-templates select="entry"/>
    </page>
  </xsl:template>

  <xsl:template match="entry">
    <!-- @href is a node, so document() resolves it against this document's
         own URI, not against the stylesheet's. -->
    <xsl:variable name="article" select="document(@href)/article"/>
    <section id="{concat('a-', position())}">
      <title>
        <link href="{concat(/listing/@base, @href)}">
          <xsl:copy-of select="$article/title/node()"/>
        </link>
      </title>
      <para class="meta">
        <xsl:if test="$article/author">
          <xsl:text>By </xsl:text>
          <xsl:copy-of select="$article/author/node()"/>
          <xsl:text> · </xsl:text>
        </xsl:if>
        <xsl:copy-of select="$article/date"/>
      </para>
      <para><xsl:copy-of select="$article/abstract/node()"/></para>
    </section>
  </xsl:template>

</xsl:stylesheet>
