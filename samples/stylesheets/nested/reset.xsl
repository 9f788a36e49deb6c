<?xml version="1.0" encoding="UTF-8"?>
<!--
  nested/reset.xsl: the processor of [location."/nested/reset"] in
  samples/axle.toml. That location sets reset = true, so outer.xsl (and
  layout.xsl) are not inherited; it adds this stage and layout.xsl
  itself.

  Like every stage of the demo it imports stage.xsl, which copies the
  page and appends "stage: reset" to its list of stages.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="stage.xsl"/>

  <xsl:variable name="stage-name" select="'reset'"/>
  <xsl:variable name="stage-location" select="'/nested/reset'"/>

</xsl:stylesheet>
