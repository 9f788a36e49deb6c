<?xml version="1.0" encoding="UTF-8"?>
<!--
  nested/outer.xsl: the processor of the outermost location of the demo,
  [location."/nested"] in samples/axle.toml. Inner locations put their
  processors before inherited ones, so this stage runs after inner.xsl
  and innermost.xsl, and just before layout.xsl, which the same location
  adds as its second processor.

  Like every stage of the demo it imports stage.xsl, which copies the
  page and appends "stage: outer" to its list of stages.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="stage.xsl"/>

  <xsl:variable name="stage-name" select="'outer'"/>
  <xsl:variable name="stage-location" select="'/nested'"/>

</xsl:stylesheet>
