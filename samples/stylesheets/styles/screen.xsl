<?xml version="1.0" encoding="UTF-8"?>
<!--
  styles/screen.xsl: the preferred style of /styles/ (the PI with
  title="screen" and no alternate="yes").

  It is the site layout: it imports layout.xsl and changes one template,
  the lead paragraph, after which it adds a box naming the style that was
  chosen. Everything else (header, navigation, footer, site.css, the
  ?theme=dark parameter) comes from layout.xsl unchanged.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="../layout.xsl"/>

  <xsl:template match="lead">
    <xsl:apply-imports/>
    <div class="note" role="note">
      <p><strong>Style: screen.</strong> The preferred chain:
        <code>page.xsl</code> (persistent) then
        <code>styles/screen.xsl</code>, which imports the site's
        <code>layout.xsl</code>. Try the
        <a href="/styles/?style=print">print</a> style.</p>
    </div>
  </xsl:template>

</xsl:stylesheet>
