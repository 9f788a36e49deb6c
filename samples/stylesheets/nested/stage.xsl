<?xml version="1.0" encoding="UTF-8"?>
<!--
  nested/stage.xsl: what every stage of the nested-locations demo does,
  imported by outer.xsl, inner.xsl, innermost.xsl and reset.xsl, which
  only set $stage-name and $stage-location.

  Input and output: the page vocabulary (XML for the next stage; the last
  stage of each chain is layout.xsl). The page is copied as it is, and
  one item is appended to the list marked stages="yes":

    stage: innermost (from [location."/nested/inner/innermost"]) ...

  so the list ends up in the order the stages ran. A page without such a
  list gets one, in a section at its end. <show-param name="lang"/> in a
  page becomes the value of that stylesheet parameter.

  Parameters: $lang and $theme, shown in each item, so a page can show
  which request parameters the location's params setting let through.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <!-- Overridden by each importing stage. -->
  <xsl:variable name="stage-name" select="'unnamed'"/>
  <xsl:variable name="stage-location" select="'?'"/>

  <xsl:param name="lang" select="''"/>
  <xsl:param name="theme" select="''"/>

  <xsl:template match="/">
    <xsl:apply-templates select="*"/>
  </xsl:template>

  <xsl:template match="page[not(.//list[@stages = 'yes'])]">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
      <section id="stages">
        <title>Stages, in the order they ran</title>
        <list type="ordered" stages="yes">
          <xsl:call-template name="stage-item"/>
        </list>
      </section>
    </xsl:copy>
  </xsl:template>

  <xsl:template match="list[@stages = 'yes']">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
      <xsl:call-template name="stage-item"/>
    </xsl:copy>
  </xsl:template>

  <xsl:template name="stage-item">
    <item>
      <strong>stage: <xsl:value-of select="$stage-name"/></strong>
      <xsl:text> (</xsl:text>
      <code>/stylesheets/nested/<xsl:value-of select="$stage-name"/>.xsl</code>
      <xsl:text>, from </xsl:text>
      <code>[location."<xsl:value-of select="$stage-location"/>"]</code>
      <xsl:text>); parameters it received: </xsl:text>
      <xsl:call-template name="param">
        <xsl:with-param name="name" select="'lang'"/>
        <xsl:with-param name="value" select="$lang"/>
      </xsl:call-template>
      <xsl:text>, </xsl:text>
      <xsl:call-template name="param">
        <xsl:with-param name="name" select="'theme'"/>
        <xsl:with-param name="value" select="$theme"/>
      </xsl:call-template>
    </item>
  </xsl:template>

  <xsl:template name="param">
    <xsl:param name="name"/>
    <xsl:param name="value"/>
    <code>$<xsl:value-of select="$name"/></code>
    <xsl:choose>
      <xsl:when test="string($value) != ''">
        <xsl:text> = '</xsl:text><xsl:value-of select="$value"/><xsl:text>'</xsl:text>
      </xsl:when>
      <xsl:otherwise> not set</xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- <show-param name="lang"/>: the parameter's value, or a dash. -->
  <xsl:template match="show-param">
    <xsl:variable name="value">
      <xsl:choose>
        <xsl:when test="@name = 'lang'"><xsl:value-of select="$lang"/></xsl:when>
        <xsl:when test="@name = 'theme'"><xsl:value-of select="$theme"/></xsl:when>
      </xsl:choose>
    </xsl:variable>
    <xsl:choose>
      <xsl:when test="string($value) != ''"><code><xsl:value-of select="$value"/></code></xsl:when>
      <xsl:otherwise><em>not set</em></xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- Everything else is copied as it is. -->
  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>

</xsl:stylesheet>
