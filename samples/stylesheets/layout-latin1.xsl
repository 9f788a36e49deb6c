<?xml version="1.0" encoding="UTF-8"?>
<!--
  layout-latin1.xsl: the site layout, serialised as ISO-8859-1.

  It imports layout.xsl and only overrides xsl:output: the importing
  stylesheet's encoding wins. Characters that Latin-1 lacks, such as the
  euro sign, are written as character references (&#8364;).
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="layout.xsl"/>

  <xsl:output method="html" encoding="ISO-8859-1" media-type="text/html"
              doctype-system="about:legacy-compat" indent="no"/>

</xsl:stylesheet>
