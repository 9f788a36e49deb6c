<?xml version="1.0" encoding="UTF-8"?>
<!--
  Axle's directory listing: AxKit's filelist document (directory.rs) as
  the body of an HTML page, which src/http/listing.rs puts in Axle's
  built-in page shell (src/http/look.rs). Compiled into the binary; used
  where a location has `directories = true` and no processors of its own
  (`?passthru=1` gives the filelist itself).

  Input: filelist (namespace http://axkit.org/2002/filelist) with
  directory* and file* (@name @size @mtime, Unix seconds); only entries
  Axle serves are in it.
  Parameters: path, the directory's URL path as shown ("/docs/"); raw,
  "1" where ?passthru=1 is allowed (a link to the XML).
  Output: the page's body: a heading and a table, directories first, each
  name a link (relative, percent-encoded), sizes in IEC units with the
  exact bytes in a title, dates in UTC; a link to the parent but at "/".
-->
<xsl:stylesheet version="1.0"
                xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
                xmlns:f="http://axkit.org/2002/filelist"
                xmlns:date="http://exslt.org/dates-and-times"
                xmlns:str="http://exslt.org/strings"
                exclude-result-prefixes="f date str">

  <xsl:output method="html" encoding="UTF-8" indent="no"/>

  <xsl:param name="path" select="'/'"/>
  <!-- "1" where ?passthru=1 gives the filelist (the location allows it). -->
  <xsl:param name="raw" select="''"/>

  <xsl:template match="/f:filelist">
    <h1>Index of <xsl:value-of select="$path"/></h1>
    <div class="scroll">
      <table class="listing">
        <thead>
          <tr><th scope="col">Name</th><th scope="col" class="n">Size</th><th scope="col">Modified (UTC)</th></tr>
        </thead>
        <tbody>
          <xsl:if test="$path != '/'">
            <tr><td><a href="../" rel="up">../</a></td><td class="n">-</td><td>parent directory</td></tr>
          </xsl:if>
          <xsl:apply-templates select="f:directory"/>
          <xsl:apply-templates select="f:file"/>
          <xsl:if test="not(f:directory | f:file)">
            <tr><td colspan="3" class="muted">nothing here is served</td></tr>
          </xsl:if>
        </tbody>
      </table>
    </div>
    <p class="muted">
      <xsl:text>Directories: </xsl:text>
      <xsl:value-of select="count(f:directory)"/>
      <xsl:text>, files: </xsl:text>
      <xsl:value-of select="count(f:file)"/>
      <xsl:text>.</xsl:text>
      <xsl:if test="$raw = '1'">
        <xsl:text> </xsl:text>
        <a href="?passthru=1">This listing as XML</a>
        <xsl:text>.</xsl:text>
      </xsl:if>
    </p>
  </xsl:template>

  <xsl:template match="f:directory">
    <tr>
      <td><a href="{str:encode-uri(@name, true())}/"><xsl:value-of select="@name"/>/</a></td>
      <td class="n">-</td>
      <td><xsl:call-template name="when"/></td>
    </tr>
  </xsl:template>

  <xsl:template match="f:file">
    <tr>
      <td><a href="{str:encode-uri(@name, true())}"><xsl:value-of select="@name"/></a></td>
      <td class="n">
        <abbr title="{@size} bytes">
          <xsl:call-template name="bytes"><xsl:with-param name="n" select="@size"/></xsl:call-template>
        </abbr>
      </td>
      <td><xsl:call-template name="when"/></td>
    </tr>
  </xsl:template>

  <!-- @mtime (Unix seconds) as "2026-12-06 02:22", in a time element. -->
  <xsl:template name="when">
    <xsl:variable name="iso" select="date:add('1970-01-01T00:00:00Z', date:duration(@mtime))"/>
    <time datetime="{$iso}">
      <xsl:value-of select="concat(substring($iso, 1, 10), ' ', substring($iso, 12, 5))"/>
    </time>
  </xsl:template>

  <!-- 1234567 -> "1.2 MiB" (IEC units, as the status page). -->
  <xsl:template name="bytes">
    <xsl:param name="n"/>
    <xsl:choose>
      <xsl:when test="$n &gt;= 1073741824"><xsl:value-of select="format-number($n div 1073741824, '0.0')"/> GiB</xsl:when>
      <xsl:when test="$n &gt;= 1048576"><xsl:value-of select="format-number($n div 1048576, '0.0')"/> MiB</xsl:when>
      <xsl:when test="$n &gt;= 1024"><xsl:value-of select="format-number($n div 1024, '0.0')"/> KiB</xsl:when>
      <xsl:otherwise><xsl:value-of select="$n"/> B</xsl:otherwise>
    </xsl:choose>
  </xsl:template>

</xsl:stylesheet>
