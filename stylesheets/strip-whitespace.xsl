<?xml version="1.0" encoding="UTF-8"?>
<!--
  strip-whitespace.xsl: the identity transform, except that text nodes
  consisting only of whitespace are removed from every element
  (xsl:strip-space elements="*"). Useful before a stage that is sensitive
  to indentation, or to make output compact. Whitespace inside text that
  has other characters is kept. Note that libxslt strips whitespace-only
  nodes even inside xml:space="preserve" elements.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <xsl:strip-space elements="*"/>

  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>

</xsl:stylesheet>
