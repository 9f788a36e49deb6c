<?xml version="1.0" encoding="UTF-8"?>
<!--
  sitemap.xsl: a sitemaps.org urlset as an HTML table, the stylesheet a
  sitemap's xml-stylesheet PI names for people who open it in a browser.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
                xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
                exclude-result-prefixes="sm">

  <xsl:output method="html" encoding="UTF-8" doctype-system="about:legacy-compat"/>

  <xsl:template match="/sm:urlset">
    <html lang="en">
      <head>
        <title>Sitemap</title>
        <link rel="stylesheet" href="/css/site.css"/>
      </head>
      <body>
        <main class="page">
          <h1>Sitemap</h1>
          <p class="lead"><xsl:value-of select="count(sm:url)"/> URLs. Crawlers
            get the sitemap itself; so does
            <code>curl -H 'Accept: application/xml' http://127.0.0.1:8080/browser/sitemap.xml</code>.</p>
          <table>
            <thead><tr><th>URL</th><th>Last modified</th><th>Priority</th></tr></thead>
            <tbody>
              <xsl:for-each select="sm:url">
                <xsl:sort select="sm:priority" data-type="number" order="descending"/>
                <tr>
                  <td><a href="{sm:loc}"><xsl:value-of select="sm:loc"/></a></td>
                  <td><xsl:value-of select="sm:lastmod"/></td>
                  <td><xsl:value-of select="sm:priority"/></td>
                </tr>
              </xsl:for-each>
            </tbody>
          </table>
          <p><a href="/browser/">Back to the page about browsers and XSLT</a></p>
        </main>
      </body>
    </html>
  </xsl:template>
</xsl:stylesheet>
