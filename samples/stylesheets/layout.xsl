<?xml version="1.0" encoding="UTF-8"?>
<!--
  layout.xsl: the shared site layout, always the LAST stage of an HTML page.

  Input: the page vocabulary, produced by page.xsl, article.xsl or listing.xsl:

    page @nav (home|articles|trivial|custom|formats|styles|nested|dynamic|xsp) @lang
      title, subtitle?, byline? (author?, date?), lead?, toc?,
      then blocks and section* (section @id; title @number?; blocks; section*)
    blocks: para @class?, list @type=ordered|bullet (item*), pre, note, quote @source,
            form @method @action (field @name @label @type=text|textarea; submit @label)
    toc:    entry* (entry @href @number?; title; entry*)
    inline: em strong code kbd term q link @href date  (rules in common.xsl)

  Output: an HTML5 page with header, navigation and footer, linking
  /css/site.css and /images/logo.svg.

  Query-string parameter: ?theme=dark switches to the dark colour scheme.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">

  <xsl:import href="common.xsl"/>

  <xsl:output method="html" encoding="UTF-8" media-type="text/html"
              doctype-system="about:legacy-compat" indent="no"/>

  <xsl:strip-space elements="page section list toc entry byline"/>

  <!-- light (default) or dark; anything else falls back to light -->
  <xsl:param name="theme" select="'light'"/>

  <xsl:variable name="dark" select="$theme = 'dark'"/>

  <xsl:template match="/">
    <xsl:choose>
      <xsl:when test="page"><xsl:apply-templates select="page"/></xsl:when>
      <xsl:otherwise>
        <!-- A helpful page instead of a blank one when a chain is wired wrongly. -->
        <html lang="en">
          <head><title>Layout input error</title></head>
          <body>
            <h1>layout.xsl expected a &lt;page&gt; element</h1>
            <p>The previous stage produced a document whose root element is
              <code>&lt;<xsl:value-of select="name(*)"/>&gt;</code>.
              Check the chain of <code>xml-stylesheet</code> processing
              instructions in the source document.</p>
          </body>
        </html>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template match="page">
    <xsl:variable name="title" select="normalize-space(title)"/>
    <html>
      <xsl:attribute name="lang">
        <xsl:choose>
          <xsl:when test="@lang"><xsl:value-of select="@lang"/></xsl:when>
          <xsl:otherwise>en</xsl:otherwise>
        </xsl:choose>
      </xsl:attribute>
      <head>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title>
          <xsl:value-of select="$title"/>
          <xsl:if test="$title != $site-name">
            <xsl:text> · </xsl:text>
            <xsl:value-of select="$site-name"/>
          </xsl:if>
        </title>
        <link rel="stylesheet" href="/css/site.css"/>
        <link rel="icon" type="image/svg+xml" href="/images/logo.svg"/>
        <link rel="alternate" type="application/atom+xml" title="Axle samples news" href="/formats/feed.xml"/>
      </head>
      <body>
        <xsl:attribute name="class">
          <xsl:choose>
            <xsl:when test="$dark">theme-dark</xsl:when>
            <xsl:otherwise>theme-light</xsl:otherwise>
          </xsl:choose>
        </xsl:attribute>
        <a class="skip-link" href="#content">Skip to content</a>
        <header class="site-header">
          <div class="wrap">
            <a class="brand" href="/">
              <img src="/images/logo.svg" alt="" width="40" height="40"/>
              <span class="brand-name">Axle</span>
            </a>
            <p class="tagline"><xsl:value-of select="$site-tagline"/></p>
          </div>
        </header>
        <nav class="site-nav" aria-label="Site">
          <ul class="wrap">
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'home'"/>
              <xsl:with-param name="href" select="'/'"/>
              <xsl:with-param name="label" select="'Home'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'articles'"/>
              <xsl:with-param name="href" select="'/articles/'"/>
              <xsl:with-param name="label" select="'Articles'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'trivial'"/>
              <xsl:with-param name="href" select="'/trivial/'"/>
              <xsl:with-param name="label" select="'Trivial chain'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'custom'"/>
              <xsl:with-param name="href" select="'/custom/numbered.xml'"/>
              <xsl:with-param name="label" select="'Custom Language'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'formats'"/>
              <xsl:with-param name="href" select="'/formats/'"/>
              <xsl:with-param name="label" select="'Output formats'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'styles'"/>
              <xsl:with-param name="href" select="'/styles/'"/>
              <xsl:with-param name="label" select="'Alternate styles'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'nested'"/>
              <xsl:with-param name="href" select="'/nested/'"/>
              <xsl:with-param name="label" select="'Nested locations'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'dynamic'"/>
              <xsl:with-param name="href" select="'/dynamic/'"/>
              <xsl:with-param name="label" select="'Dynamic sources'"/>
            </xsl:call-template>
            <xsl:call-template name="nav-item">
              <xsl:with-param name="key" select="'xsp'"/>
              <xsl:with-param name="href" select="'/xsp/guestbook.xml'"/>
              <xsl:with-param name="label" select="'XSP pages'"/>
            </xsl:call-template>
          </ul>
        </nav>
        <main id="content" class="wrap">
          <article>
            <header class="page-header">
              <h1><xsl:apply-templates select="title/node()"/></h1>
              <xsl:apply-templates select="subtitle | byline | lead"/>
            </header>
            <xsl:apply-templates select="*[not(self::title or self::subtitle or self::byline or self::lead)]"/>
          </article>
        </main>
        <footer class="site-footer">
          <div class="wrap">
            <p>Rendered by Axle through a chain of XSLT stylesheets. The page
              layout comes from <code>stylesheets/layout.xsl</code>, which
              imports <code>stylesheets/common.xsl</code>.</p>
            <p>
              <xsl:choose>
                <xsl:when test="$dark"><a href="?theme=light">Light theme</a></xsl:when>
                <xsl:otherwise><a href="?theme=dark">Dark theme</a></xsl:otherwise>
              </xsl:choose>
              <xsl:text> · </xsl:text>
              <a href="/formats/feed.xml">Atom feed</a>
            </p>
          </div>
        </footer>
      </body>
    </html>
  </xsl:template>

  <xsl:template name="nav-item">
    <xsl:param name="key"/>
    <xsl:param name="href"/>
    <xsl:param name="label"/>
    <li>
      <a href="{$href}">
        <xsl:if test="/page/@nav = $key">
          <xsl:attribute name="aria-current">page</xsl:attribute>
        </xsl:if>
        <xsl:value-of select="$label"/>
      </a>
    </li>
  </xsl:template>

  <!-- Page header parts -->
  <xsl:template match="subtitle">
    <p class="subtitle"><xsl:apply-templates/></p>
  </xsl:template>

  <xsl:template match="byline">
    <p class="byline">
      <xsl:if test="author">
        <xsl:text>By </xsl:text>
        <span class="author"><xsl:apply-templates select="author/node()"/></span>
      </xsl:if>
      <xsl:if test="author and date"><xsl:text> · </xsl:text></xsl:if>
      <xsl:apply-templates select="date"/>
    </p>
  </xsl:template>

  <xsl:template match="lead">
    <p class="lead"><xsl:apply-templates/></p>
  </xsl:template>

  <!-- Table of contents -->
  <xsl:template match="toc">
    <nav class="toc" aria-labelledby="toc-heading">
      <h2 id="toc-heading">Contents</h2>
      <ol>
        <xsl:if test=".//entry/@number">
          <xsl:attribute name="class">numbered</xsl:attribute>
        </xsl:if>
        <xsl:apply-templates select="entry"/>
      </ol>
    </nav>
  </xsl:template>

  <xsl:template match="entry">
    <li>
      <a href="{@href}">
        <xsl:call-template name="section-number"/>
        <xsl:apply-templates select="title/node()"/>
      </a>
      <xsl:if test="entry">
        <ol><xsl:apply-templates select="entry"/></ol>
      </xsl:if>
    </li>
  </xsl:template>

  <!-- Sections: h2 for top-level sections, one level deeper per nesting, h6 at most. -->
  <xsl:template match="section">
    <xsl:variable name="depth" select="count(ancestor::section) + 2"/>
    <xsl:variable name="level">
      <xsl:choose>
        <xsl:when test="$depth &gt; 6">6</xsl:when>
        <xsl:otherwise><xsl:value-of select="$depth"/></xsl:otherwise>
      </xsl:choose>
    </xsl:variable>
    <section>
      <xsl:copy-of select="@id"/>
      <xsl:element name="h{$level}">
        <xsl:call-template name="section-number">
          <xsl:with-param name="number" select="title/@number"/>
        </xsl:call-template>
        <xsl:apply-templates select="title/node()"/>
      </xsl:element>
      <xsl:apply-templates select="*[not(self::title)]"/>
    </section>
  </xsl:template>

  <!-- Blocks -->
  <xsl:template match="para">
    <p>
      <xsl:copy-of select="@class"/>
      <xsl:apply-templates/>
    </p>
  </xsl:template>

  <xsl:template match="list">
    <xsl:choose>
      <xsl:when test="@type = 'ordered'"><ol><xsl:apply-templates select="item"/></ol></xsl:when>
      <xsl:otherwise><ul><xsl:apply-templates select="item"/></ul></xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template match="item">
    <li><xsl:apply-templates/></li>
  </xsl:template>

  <xsl:template match="pre">
    <pre><code><xsl:value-of select="."/></code></pre>
  </xsl:template>

  <xsl:template match="note">
    <div class="note" role="note">
      <p><strong>Note: </strong><xsl:apply-templates/></p>
    </div>
  </xsl:template>

  <xsl:template match="form">
    <form method="{@method}" action="{@action}">
      <xsl:apply-templates select="field | submit"/>
    </form>
  </xsl:template>

  <xsl:template match="field">
    <p>
      <label for="{@name}"><xsl:value-of select="@label"/></label><br/>
      <xsl:choose>
        <xsl:when test="@type = 'textarea'">
          <textarea id="{@name}" name="{@name}" rows="4" cols="50" required="required"></textarea>
        </xsl:when>
        <xsl:otherwise>
          <input id="{@name}" name="{@name}" type="text" required="required"/>
        </xsl:otherwise>
      </xsl:choose>
    </p>
  </xsl:template>

  <xsl:template match="submit">
    <p><button type="submit"><xsl:value-of select="@label"/></button></p>
  </xsl:template>

  <xsl:template match="quote">
    <figure class="quote">
      <blockquote><p><xsl:apply-templates/></p></blockquote>
      <xsl:if test="@source">
        <figcaption><xsl:value-of select="@source"/></figcaption>
      </xsl:if>
    </figure>
  </xsl:template>

</xsl:stylesheet>
