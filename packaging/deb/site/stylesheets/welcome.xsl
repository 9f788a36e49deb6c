<?xml version="1.0" encoding="UTF-8"?>
<!-- welcome.xsl: the packaged site's page vocabulary (welcome, title,
     para, code, command) as one small HTML page. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" doctype-system="about:legacy-compat"/>

  <xsl:template match="/welcome">
    <html lang="en">
      <head>
        <meta charset="UTF-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title><xsl:value-of select="title"/></title>
        <style>
          body { font: 1rem/1.5 system-ui, sans-serif; max-width: 40rem;
                 margin: 2rem auto; padding: 0 1rem; color: #222; }
          pre { background: #f4f4f4; padding: .75rem; overflow-x: auto; }
          @media (prefers-color-scheme: dark) {
            body { background: #111; color: #ddd; }
            pre { background: #222; }
          }
        </style>
      </head>
      <body>
        <h1><xsl:value-of select="title"/></h1>
        <xsl:apply-templates select="para | command"/>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="para"><p><xsl:apply-templates/></p></xsl:template>
  <xsl:template match="code"><code><xsl:apply-templates/></code></xsl:template>
  <xsl:template match="command"><pre><code><xsl:value-of select="."/></code></pre></xsl:template>
</xsl:stylesheet>
