<?xml version="1.0" encoding="UTF-8"?>
<!--
  nested/innermost.xsl: the processor of
  [location."/nested/inner/innermost"] in samples/axle.toml, the deepest
  location of the demo, so it runs first, before inner.xsl and
  outer.xsl.

  Like every stage of the demo it imports stage.xsl, which copies the
  page and appends "stage: innermost" to its list of stages.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="stage.xsl"/>

  <xsl:variable name="stage-name" select="'innermost'"/>
  <xsl:variable name="stage-location" select="'/nested/inner/innermost'"/>

</xsl:stylesheet>
