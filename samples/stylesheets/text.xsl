<?xml version="1.0" encoding="UTF-8"?>
<!--
  text.xsl: renders the <notes> vocabulary of /formats/notes.xml as plain
  text (xsl:output method="text", served as text/plain). Headings are
  underlined and paragraphs are re-wrapped to $width columns.

    notes: title, note* (note @date; title, para*)
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="text" encoding="UTF-8" media-type="text/plain"/>

  <!-- Line width; try /formats/notes.xml?width=40 -->
  <xsl:param name="width" select="72"/>

  <xsl:variable name="w">
    <xsl:choose>
      <xsl:when test="number($width) &gt;= 20"><xsl:value-of select="floor(number($width))"/></xsl:when>
      <xsl:otherwise>72</xsl:otherwise>
    </xsl:choose>
  </xsl:variable>

  <xsl:template match="/">
    <xsl:apply-templates select="notes"/>
  </xsl:template>

  <xsl:template match="notes">
    <xsl:call-template name="heading">
      <xsl:with-param name="text" select="normalize-space(title)"/>
      <xsl:with-param name="rule" select="'='"/>
    </xsl:call-template>
    <xsl:apply-templates select="note"/>
  </xsl:template>

  <xsl:template match="note">
    <xsl:if test="position() &gt; 1"><xsl:text>&#10;</xsl:text></xsl:if>
    <xsl:call-template name="heading">
      <xsl:with-param name="text" select="concat(normalize-space(title), ' (', @date, ')')"/>
      <xsl:with-param name="rule" select="'-'"/>
    </xsl:call-template>
    <xsl:for-each select="para">
      <xsl:if test="position() &gt; 1"><xsl:text>&#10;</xsl:text></xsl:if>
      <xsl:call-template name="wrap">
        <xsl:with-param name="text" select="concat(normalize-space(.), ' ')"/>
      </xsl:call-template>
    </xsl:for-each>
  </xsl:template>

  <xsl:template name="heading">
    <xsl:param name="text"/>
    <xsl:param name="rule"/>
    <xsl:value-of select="$text"/>
    <xsl:text>&#10;</xsl:text>
    <xsl:call-template name="repeat">
      <xsl:with-param name="char" select="$rule"/>
      <xsl:with-param name="count" select="string-length($text)"/>
    </xsl:call-template>
    <xsl:text>&#10;&#10;</xsl:text>
  </xsl:template>

  <xsl:template name="repeat">
    <xsl:param name="char"/>
    <xsl:param name="count"/>
    <xsl:if test="$count &gt; 0">
      <xsl:value-of select="$char"/>
      <xsl:call-template name="repeat">
        <xsl:with-param name="char" select="$char"/>
        <xsl:with-param name="count" select="$count - 1"/>
      </xsl:call-template>
    </xsl:if>
  </xsl:template>

  <!-- Greedy word wrap. $text is normalised and ends with one space;
       $line is the line built so far. -->
  <xsl:template name="wrap">
    <xsl:param name="text"/>
    <xsl:param name="line" select="''"/>
    <xsl:choose>
      <xsl:when test="$text = ''">
        <xsl:if test="$line != ''"><xsl:value-of select="$line"/><xsl:text>&#10;</xsl:text></xsl:if>
      </xsl:when>
      <xsl:otherwise>
        <xsl:variable name="word" select="substring-before($text, ' ')"/>
        <xsl:variable name="rest" select="substring-after($text, ' ')"/>
        <xsl:choose>
          <xsl:when test="$line = ''">
            <xsl:call-template name="wrap">
              <xsl:with-param name="text" select="$rest"/>
              <xsl:with-param name="line" select="$word"/>
            </xsl:call-template>
          </xsl:when>
          <xsl:when test="string-length($line) + 1 + string-length($word) &lt;= $w">
            <xsl:call-template name="wrap">
              <xsl:with-param name="text" select="$rest"/>
              <xsl:with-param name="line" select="concat($line, ' ', $word)"/>
            </xsl:call-template>
          </xsl:when>
          <xsl:otherwise>
            <xsl:value-of select="$line"/>
            <xsl:text>&#10;</xsl:text>
            <xsl:call-template name="wrap">
              <xsl:with-param name="text" select="$rest"/>
              <xsl:with-param name="line" select="$word"/>
            </xsl:call-template>
          </xsl:otherwise>
        </xsl:choose>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

</xsl:stylesheet>
