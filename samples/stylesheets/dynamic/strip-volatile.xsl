<?xml version="1.0" encoding="UTF-8"?>
<!--
  strip-volatile.xsl: the identity transform, minus <volatile> elements.
  The first stage of examples/dynamic_source.rs, whose source carries a
  per-request counter in <volatile>: this stage's output is the same on
  every request, so in incremental mode the later stages are reused
  (early cut-off) while all-or-nothing recomputes the whole chain.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="xml" encoding="UTF-8"/>
  <xsl:template match="@*|node()">
    <xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy>
  </xsl:template>
  <xsl:template match="volatile"/>
</xsl:stylesheet>
