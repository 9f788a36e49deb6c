<?xml version="1.0" encoding="UTF-8"?>
<!--
  identity.xsl: copies its input unchanged (elements, attributes, text,
  comments and processing instructions). Use it as a no-op stage, or
  xsl:import it and override only the templates you need.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="xml" encoding="UTF-8"/>

  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>

</xsl:stylesheet>
