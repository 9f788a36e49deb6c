<?xml version="1.0" encoding="UTF-8"?>
<!-- hello.xsl: the one-stage chain of the "hello" scenario. run.sh pads the
     message of hello.xml so that the transformed body is exactly 128 bytes. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" media-type="text/html" indent="no"/>
  <xsl:template match="/hello">
    <html><body><p><xsl:value-of select="."/></p></body></html>
  </xsl:template>
</xsl:stylesheet>
