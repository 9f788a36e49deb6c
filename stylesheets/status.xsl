<?xml version="1.0" encoding="UTF-8"?>
<!--
  status.xsl: the admin listener's status page (GET /status), compiled into
  the axle binary (src/http/builtin.rs) and applied to the status document
  built in src/http/admin/status.rs. Every size arrives twice: exact bytes
  (@bytes, shown in a title) and in IEC units as one Rust formatter wrote
  them (@bytes-text): this stylesheet formats no size itself.

    status @version @uptime-seconds @mode @freshness @hit-sample
      config     setting* (@name @title?; text)
      counters   @answered @hits @misses @partials @early-cutoffs @uncacheable
                 @untransformed @hot-hits @memory-hits @lower-hits
                 @stage-runs @compiles @renders @evictions
      tiers      tier* (@name @entries @bytes @bytes-text @capacity
                 @capacity-text @hits @hot-hits? @rendered-hits? @evictions
                 @rejected @write-errors @dropped @writable)
      compressed @gzip @br @bytes-made @bytes-made-text @served
      stages     stage* (@language @runs @micros @mean-ms)
      history    @every-seconds @window-seconds
                 interval* (@age-seconds @hits @computed @renders
                 @hit-ratio? @latency-ms?), oldest first

  Output: the page's body (Rust puts it in the built-in page shell, with
  the built-in style), its chart an inline SVG drawn here.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:output method="html" encoding="UTF-8" indent="no"/>

  <!-- The chart's plot area, in SVG user units. -->
  <xsl:variable name="w" select="600"/>
  <xsl:variable name="h" select="160"/>
  <xsl:variable name="left" select="50"/>
  <xsl:variable name="top" select="10"/>

  <xsl:template match="/status">
    <h1>Axle status</h1>
    <p>
      <xsl:text>Axle </xsl:text><xsl:value-of select="@version"/>
      <xsl:text>, up </xsl:text>
      <xsl:call-template name="duration">
        <xsl:with-param name="s" select="@uptime-seconds"/>
      </xsl:call-template>
      <xsl:text>; cache mode </xsl:text><strong><xsl:value-of select="@mode"/></strong>
      <xsl:text>, freshness </xsl:text><strong><xsl:value-of select="@freshness"/></strong>
      <xsl:text>.</xsl:text>
    </p>
    <xsl:apply-templates select="history"/>
    <xsl:apply-templates select="counters"/>
    <xsl:apply-templates select="tiers"/>
    <xsl:apply-templates select="stages"/>
    <xsl:apply-templates select="pages/hottest"/>
    <xsl:apply-templates select="pages/slowest"/>
    <xsl:apply-templates select="stylesheets"/>
    <xsl:apply-templates select="compressed"/>
    <xsl:apply-templates select="config"/>
  </xsl:template>

  <!-- The chart: hit ratio (0-100 %) and mean render latency (0 to the
       window's highest) per interval, now at the right edge. -->
  <xsl:template match="history">
    <xsl:variable name="window" select="@window-seconds"/>
    <xsl:variable name="max-latency">
      <xsl:for-each select="interval[@latency-ms]">
        <xsl:sort select="@latency-ms" data-type="number" order="descending"/>
        <xsl:if test="position() = 1"><xsl:value-of select="@latency-ms"/></xsl:if>
      </xsl:for-each>
    </xsl:variable>
    <xsl:variable name="scale">
      <xsl:choose>
        <xsl:when test="number($max-latency) &gt; 0"><xsl:value-of select="$max-latency"/></xsl:when>
        <xsl:otherwise>1</xsl:otherwise>
      </xsl:choose>
    </xsl:variable>
    <h2>Last <xsl:value-of select="round($window div 60)"/> minutes</h2>
    <svg id="chart" width="{$w + $left + 70}" height="{$h + $top + 30}"
         viewBox="0 0 {$w + $left + 70} {$h + $top + 30}" role="img"
         aria-label="Hit ratio and mean render latency over the last {round($window div 60)} minutes">
      <rect x="{$left}" y="{$top}" width="{$w}" height="{$h}" fill="none" stroke="#8889"/>
      <line x1="{$left}" y1="{$top + $h div 2}" x2="{$left + $w}" y2="{$top + $h div 2}" stroke="#8884"/>
      <text x="{$left - 6}" y="{$top + 4}" text-anchor="end">100%</text>
      <text x="{$left - 6}" y="{$top + $h}" text-anchor="end">0%</text>
      <text x="{$left + $w + 6}" y="{$top + 4}">
        <xsl:value-of select="format-number($scale, '0.##')"/><xsl:text> ms</xsl:text>
      </text>
      <text x="{$left + $w + 6}" y="{$top + $h}">0 ms</text>
      <text x="{$left}" y="{$top + $h + 18}">
        <xsl:text>-</xsl:text><xsl:value-of select="round($window div 60)"/><xsl:text> min</xsl:text>
      </text>
      <text x="{$left + $w}" y="{$top + $h + 18}" text-anchor="end">now</text>
      <polyline class="ratio" fill="none" stroke-width="2">
        <xsl:attribute name="points">
          <xsl:for-each select="interval[@hit-ratio]">
            <xsl:value-of select="format-number($left + $w - @age-seconds * $w div $window, '0.#')"/>
            <xsl:text>,</xsl:text>
            <xsl:value-of select="format-number($top + $h - @hit-ratio * $h, '0.#')"/>
            <xsl:text> </xsl:text>
          </xsl:for-each>
        </xsl:attribute>
      </polyline>
      <polyline class="latency" fill="none" stroke-width="2">
        <xsl:attribute name="points">
          <xsl:for-each select="interval[@latency-ms]">
            <xsl:value-of select="format-number($left + $w - @age-seconds * $w div $window, '0.#')"/>
            <xsl:text>,</xsl:text>
            <xsl:value-of select="format-number($top + $h - @latency-ms * $h div $scale, '0.#')"/>
            <xsl:text> </xsl:text>
          </xsl:for-each>
        </xsl:attribute>
      </polyline>
      <!-- A mark per point: one interval alone is no line. -->
      <xsl:for-each select="interval[@hit-ratio]">
        <circle class="ratio" fill="#2a7" r="2.5"
                cx="{format-number($left + $w - @age-seconds * $w div $window, '0.#')}"
                cy="{format-number($top + $h - @hit-ratio * $h, '0.#')}"/>
      </xsl:for-each>
      <xsl:for-each select="interval[@latency-ms]">
        <circle class="latency" fill="#c52" r="2.5"
                cx="{format-number($left + $w - @age-seconds * $w div $window, '0.#')}"
                cy="{format-number($top + $h - @latency-ms * $h div $scale, '0.#')}"/>
      </xsl:for-each>
    </svg>
    <p>
      <span style="color: #2a7">&#x25A0; hit ratio</span>
      <xsl:text> and </xsl:text>
      <span style="color: #c52">&#x25A0; mean render time of a computed response</span>
      <xsl:text>, per </xsl:text><xsl:value-of select="@every-seconds"/><xsl:text> s.</xsl:text>
    </p>
  </xsl:template>

  <!-- Every response once: hits (hot memo + memory + lower tiers) and the
       responses that computed something. -->
  <xsl:template match="counters">
    <div class="scroll">
    <table id="counters">
      <caption>Responses</caption>
      <tbody>
        <tr><th scope="row">answered from the cache or computed</th><td class="n"><xsl:value-of select="@answered"/></td></tr>
        <tr><th scope="row">hits</th><td class="n"><xsl:value-of select="@hits"/></td></tr>
        <tr><th scope="row">&#8195;from the hot memo</th><td class="n"><xsl:value-of select="@hot-hits"/></td></tr>
        <tr><th scope="row">&#8195;rendered from the memory tier</th><td class="n"><xsl:value-of select="@memory-hits"/></td></tr>
        <tr><th scope="row">&#8195;from a lower tier</th><td class="n"><xsl:value-of select="@lower-hits"/></td></tr>
        <tr><th scope="row">misses (computed in full)</th><td class="n"><xsl:value-of select="@misses"/></td></tr>
        <tr><th scope="row">partials (some stages reused)</th><td class="n"><xsl:value-of select="@partials"/></td></tr>
        <tr><th scope="row">&#8195;of which early cut-offs</th><td class="n"><xsl:value-of select="@early-cutoffs"/></td></tr>
        <tr><th scope="row">uncacheable (computed, not stored)</th><td class="n"><xsl:value-of select="@uncacheable"/></td></tr>
        <tr>
          <th scope="row">hit ratio</th>
          <td class="n">
            <xsl:choose>
              <xsl:when test="@answered &gt; 0">
                <xsl:value-of select="format-number(@hits div @answered, '0.0%')"/>
              </xsl:when>
              <xsl:otherwise>-</xsl:otherwise>
            </xsl:choose>
          </td>
        </tr>
        <tr><th scope="row">documents served with no stage</th><td class="n"><xsl:value-of select="@untransformed"/></td></tr>
        <tr><th scope="row">requests that reached the render path</th><td class="n"><xsl:value-of select="@renders"/></td></tr>
        <tr><th scope="row">stage runs</th><td class="n"><xsl:value-of select="@stage-runs"/></td></tr>
        <tr><th scope="row">stylesheet compilations</th><td class="n"><xsl:value-of select="@compiles"/></td></tr>
        <tr><th scope="row">evictions (every tier)</th><td class="n"><xsl:value-of select="@evictions"/></td></tr>
      </tbody>
    </table>
    </div>
    <p class="muted">Counted exactly, every response. The hot memo answers from the memory tier's entries: its hits are the memory tier's too (see the tiers below).</p>
  </xsl:template>

  <xsl:template match="tiers">
    <div class="scroll">
    <table id="tiers">
      <caption>Cache tiers</caption>
      <thead>
        <tr><th scope="col">tier</th><th scope="col" class="n">entries</th><th scope="col" class="n">size</th><th scope="col" class="n">capacity</th><th scope="col" class="n">hits</th><th scope="col" class="n">evictions</th><th scope="col" class="n">rejected</th><th scope="col" class="n">write errors</th><th scope="col" class="n">dropped</th><th scope="col">writable</th></tr>
      </thead>
      <tbody>
        <xsl:for-each select="tier">
          <tr>
            <th scope="row"><xsl:value-of select="@name"/></th>
            <td class="n"><xsl:value-of select="@entries"/></td>
            <td class="n"><abbr title="{@bytes} bytes"><xsl:value-of select="@bytes-text"/></abbr></td>
            <td class="n">
              <xsl:choose>
                <xsl:when test="@capacity &gt; 0"><abbr title="{@capacity} bytes"><xsl:value-of select="@capacity-text"/></abbr></xsl:when>
                <xsl:otherwise>unbounded</xsl:otherwise>
              </xsl:choose>
            </td>
            <td class="n">
              <xsl:choose>
                <xsl:when test="@hot-hits">
                  <abbr title="{@hot-hits} from the hot memo + {@rendered-hits} rendered"><xsl:value-of select="@hits"/></abbr>
                </xsl:when>
                <xsl:otherwise><xsl:value-of select="@hits"/></xsl:otherwise>
              </xsl:choose>
            </td>
            <td class="n"><xsl:value-of select="@evictions"/></td>
            <td class="n"><xsl:value-of select="@rejected"/></td>
            <td class="n"><xsl:value-of select="@write-errors"/></td>
            <td class="n"><xsl:value-of select="@dropped"/></td>
            <td><xsl:value-of select="@writable"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
    </div>
  </xsl:template>

  <xsl:template match="stages">
    <table id="stages">
      <caption>Stage time per Language</caption>
      <thead><tr><th scope="col">Language</th><th scope="col" class="n">runs</th><th scope="col" class="n">total ms</th><th scope="col" class="n">mean ms</th></tr></thead>
      <tbody>
        <xsl:for-each select="stage">
          <tr>
            <th scope="row"><xsl:value-of select="@language"/></th>
            <td class="n"><xsl:value-of select="@runs"/></td>
            <td class="n"><xsl:value-of select="format-number(@micros div 1000, '0.0')"/></td>
            <td class="n"><xsl:value-of select="@mean-ms"/></td>
          </tr>
        </xsl:for-each>
        <xsl:if test="not(stage)">
          <tr><td colspan="4">no stage has run yet</td></tr>
        </xsl:if>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="hottest">
    <table id="hottest">
      <caption>Hottest pages</caption>
      <thead><tr><th scope="col">page</th><th scope="col" class="n">requests (&#8776;)</th><th scope="col" class="n">renders</th><th scope="col" class="n">mean render ms</th></tr></thead>
      <tbody>
        <xsl:for-each select="page">
          <tr>
            <th scope="row"><xsl:value-of select="@path"/></th>
            <td class="n"><xsl:value-of select="@requests"/></td>
            <td class="n"><xsl:value-of select="@renders"/></td>
            <td class="n"><xsl:if test="@renders &gt; 0"><xsl:value-of select="@mean-ms"/></xsl:if></td>
          </tr>
        </xsl:for-each>
        <xsl:if test="not(page)">
          <tr><td colspan="4">no page has been served yet</td></tr>
        </xsl:if>
      </tbody>
    </table>
    <p class="muted" id="sampled">
      <xsl:text>Requests here are sampled: a hit answered on the hot path is counted 1 in </xsl:text>
      <xsl:value-of select="/status/@hit-sample"/>
      <xsl:text> per thread, weighted by </xsl:text>
      <xsl:value-of select="/status/@hit-sample"/>
      <xsl:text> (&#8776;); renders and their times are counted exactly. The response counters above are exact.</xsl:text>
    </p>
  </xsl:template>

  <xsl:template match="slowest">
    <table id="slowest">
      <caption>Slowest pages (mean time of a render)</caption>
      <thead><tr><th scope="col">page</th><th scope="col" class="n">mean ms</th><th scope="col" class="n">max ms</th><th scope="col" class="n">renders</th></tr></thead>
      <tbody>
        <xsl:for-each select="page">
          <tr>
            <th scope="row"><xsl:value-of select="@path"/></th>
            <td class="n"><xsl:value-of select="@mean-ms"/></td>
            <td class="n"><xsl:value-of select="@max-ms"/></td>
            <td class="n"><xsl:value-of select="@renders"/></td>
          </tr>
        </xsl:for-each>
        <xsl:if test="not(page)">
          <tr><td colspan="4">no page has been rendered yet</td></tr>
        </xsl:if>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="stylesheets">
    <table id="stylesheets">
      <caption>Compiled stylesheets</caption>
      <thead><tr><th scope="col">stylesheet</th><th scope="col">Language</th><th scope="col" class="n">files</th><th scope="col">closure</th></tr></thead>
      <tbody>
        <xsl:for-each select="stylesheet">
          <tr>
            <th scope="row"><xsl:value-of select="@path"/></th>
            <td><xsl:value-of select="@language"/></td>
            <td class="n"><xsl:value-of select="@files"/></td>
            <td><code><xsl:value-of select="@closure"/></code></td>
          </tr>
        </xsl:for-each>
        <xsl:if test="not(stylesheet)">
          <tr><td colspan="4">none compiled yet</td></tr>
        </xsl:if>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="compressed">
    <table id="compressed">
      <caption>Compressed variants</caption>
      <tbody>
        <tr><th scope="row">gzip made</th><td class="n"><xsl:value-of select="@gzip"/></td></tr>
        <tr><th scope="row">brotli made</th><td class="n"><xsl:value-of select="@br"/></td></tr>
        <tr><th scope="row">bytes made</th><td class="n"><abbr title="{@bytes-made} bytes"><xsl:value-of select="@bytes-made-text"/></abbr></td></tr>
        <tr><th scope="row">responses sent compressed</th><td class="n"><xsl:value-of select="@served"/></td></tr>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="config">
    <table id="config">
      <caption>Configuration in force</caption>
      <tbody>
        <xsl:for-each select="setting">
          <tr>
            <th scope="row"><xsl:value-of select="@name"/></th>
            <td>
              <xsl:choose>
                <xsl:when test="@title"><abbr title="{@title}"><xsl:value-of select="."/></abbr></xsl:when>
                <xsl:otherwise><xsl:value-of select="."/></xsl:otherwise>
              </xsl:choose>
            </td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>

  <!-- "1h 02m 03s" -->
  <xsl:template name="duration">
    <xsl:param name="s"/>
    <xsl:if test="$s &gt;= 86400"><xsl:value-of select="floor($s div 86400)"/>d </xsl:if>
    <xsl:if test="$s &gt;= 3600"><xsl:value-of select="floor($s mod 86400 div 3600)"/>h </xsl:if>
    <xsl:if test="$s &gt;= 60"><xsl:value-of select="format-number(floor($s mod 3600 div 60), '00')"/>m </xsl:if>
    <xsl:value-of select="format-number($s mod 60, '00')"/><xsl:text>s</xsl:text>
  </xsl:template>

</xsl:stylesheet>
