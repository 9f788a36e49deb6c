<?xml version="1.0" encoding="UTF-8"?>
<!--
  nested/inner.xsl: the processor of [location."/nested/inner"] in
  samples/axle.toml. Under /nested/inner/ it runs before outer.xsl (an
  inner location's processors come first); under
  /nested/inner/innermost/ it runs after innermost.xsl.

  Like every stage of the demo it imports stage.xsl, which copies the
  page and appends "stage: inner" to its list of stages.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="stage.xsl"/>

  <xsl:variable name="stage-name" select="'inner'"/>
  <xsl:variable name="stage-location" select="'/nested/inner'"/>

</xsl:stylesheet>
