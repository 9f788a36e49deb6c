<?xml version="1.0" encoding="UTF-8"?>
<!--
  toc.xsl: section ids and tables of contents, xsl:include'd by page.xsl
  and article.xsl (an included file is a dependency of both chains).

  A section without an id gets one from its position: "s-2-1" is the
  first subsection of the second section. Positions are used rather than
  generate-id() so that the output is the same on every run.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:template match="section" mode="id">
    <xsl:choose>
      <xsl:when test="@id"><xsl:value-of select="@id"/></xsl:when>
      <xsl:otherwise>
        <xsl:text>s-</xsl:text>
        <xsl:number level="multiple" count="section" format="1-1"/>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- Builds <toc><entry href="#id" number="1"><title>...</title>...</entry></toc>
       for the given sections, two levels deep. -->
  <xsl:template name="toc">
    <xsl:param name="sections" select="section"/>
    <xsl:if test="$sections">
      <toc>
        <xsl:apply-templates select="$sections" mode="toc"/>
      </toc>
    </xsl:if>
  </xsl:template>

  <xsl:template match="section" mode="toc">
    <entry>
      <xsl:attribute name="href">
        <xsl:text>#</xsl:text>
        <xsl:apply-templates select="." mode="id"/>
      </xsl:attribute>
      <xsl:copy-of select="title/@number"/>
      <title><xsl:copy-of select="title/node()"/></title>
      <xsl:if test="count(ancestor::section) &lt; 1">
        <xsl:apply-templates select="section" mode="toc"/>
      </xsl:if>
    </entry>
  </xsl:template>

</xsl:stylesheet>
