//! Reading a suite's `MANIFEST.tsv`: each row becomes a [`Case`] (its
//! group, files, params, xsltproc options and comparison rule). Kept apart
//! because it is the one place that knows the manifest format; everything
//! after it works on cases.

use std::path::Path;

/// A group of cases with its own threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// `libxslt/`.
    Libxslt,
    /// `xalan-conf/conf/...`.
    XalanConf,
    /// `xalan-conf/conferr/...`.
    XalanErr,
}

impl Group {
    /// All groups, in report order.
    pub const ALL: [Group; 3] = [Group::Libxslt, Group::XalanConf, Group::XalanErr];

    /// Report name.
    pub fn name(self) -> &'static str {
        match self {
            Group::Libxslt => "libxslt",
            Group::XalanConf => "xalan conf",
            Group::XalanErr => "xalan conferr",
        }
    }

    /// The suite folder (the document root for its cases).
    pub fn folder(self) -> &'static str {
        match self {
            Group::Libxslt => "libxslt",
            Group::XalanConf | Group::XalanErr => "xalan-conf",
        }
    }

    /// The Done-means threshold: `(passes needed, cases)`.
    pub fn threshold(self) -> (usize, usize) {
        match self {
            Group::Libxslt => (513, 553),
            Group::XalanConf => (1578, 1693),
            Group::XalanErr => (226, 310),
        }
    }
}

/// Which suites to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteChoice {
    /// Both.
    Both,
    /// `libxslt/` only.
    Libxslt,
    /// `xalan-conf/` only.
    Xalan,
}

/// A manifest comparison rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Bytes equal.
    Exact,
    /// Bytes equal after dropping every line containing `id`.
    NoId,
    /// Bytes equal after dropping lines matching `id[0-9]`.
    FilteredId,
    /// `xmlcompare.py`'s rules.
    XmlWs,
    /// The render must fail.
    ExpectError,
}

/// One manifest row.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its group.
    pub group: Group,
    /// `case_id`.
    pub id: String,
    /// The source document, relative to the suite folder.
    pub xml: String,
    /// The stylesheet, relative to the suite folder; `None` for `(pi)`.
    pub xsl: Option<String>,
    /// Expected output file; `None` = must be empty.
    pub expected: Option<String>,
    /// String params (quotes stripped).
    pub params: Vec<(String, String)>,
    /// Params given as unquoted XPath expressions (passed as strings).
    pub unquoted_params: Vec<String>,
    /// `--maxdepth=N`.
    pub max_depth: Option<u32>,
    /// `--xinclude`.
    pub xinclude: bool,
    /// `xsltproc=pass`.
    pub xsltproc_pass: bool,
    /// The comparison rule.
    pub compare: Compare,
    /// Manifest notes.
    pub notes: String,
    /// A libxslt runtest.c row: a render error counts as empty output.
    pub runtest: bool,
}

impl Case {
    /// `group/case_id` for reports.
    pub fn label(&self) -> String {
        format!("{} {}", self.group.folder(), self.id)
    }
}

/// Reads a suite's manifest.
pub fn load_manifest(conf: &Path, folder: &str) -> Result<Vec<Case>, String> {
    let path = conf.join(folder).join("MANIFEST.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 8 {
            return Err(format!(
                "{}:{}: {} columns",
                path.display(),
                n + 1,
                cols.len()
            ));
        }
        let id = cols[0].to_string();
        let group = match folder {
            "libxslt" => Group::Libxslt,
            _ if id.starts_with("conferr/") => Group::XalanErr,
            _ => Group::XalanConf,
        };
        let compare = match cols[7] {
            "exact" => Compare::Exact,
            "noid" => Compare::NoId,
            "filtered-id" => Compare::FilteredId,
            "xml-ws" => Compare::XmlWs,
            "expect-error" => Compare::ExpectError,
            other => return Err(format!("{id}: unknown compare mode {other}")),
        };
        let mut case = Case {
            group,
            id,
            xml: cols[1].to_string(),
            xsl: (cols[2] != "(pi)").then(|| cols[2].to_string()),
            expected: (cols[3] != "-").then(|| cols[3].to_string()),
            params: Vec::new(),
            unquoted_params: Vec::new(),
            max_depth: None,
            xinclude: false,
            xsltproc_pass: cols[5] == "xsltproc=pass",
            compare,
            notes: cols.get(8).copied().unwrap_or("-").to_string(),
            runtest: cols[4].contains("passed_value"),
        };
        if cols[4] != "-" {
            for token in cols[4].split(';').filter(|t| !t.is_empty()) {
                parse_param(&mut case, token)?;
            }
        }
        case.params.sort();
        cases.push(case);
    }
    Ok(cases)
}

fn parse_param(case: &mut Case, token: &str) -> Result<(), String> {
    if let Some(option) = token.strip_prefix("--") {
        let (name, value) = option.split_once('=').unwrap_or((option, ""));
        match name {
            "maxdepth" => {
                case.max_depth = Some(
                    value
                        .parse()
                        .map_err(|_| format!("{}: bad --maxdepth {value}", case.id))?,
                );
            }
            "nonet" => {} // Axle never reads the network
            "xinclude" => case.xinclude = true,
            other => return Err(format!("{}: unknown xsltproc option --{other}", case.id)),
        }
        return Ok(());
    }
    let Some((name, expr)) = token.split_once('=') else {
        return Err(format!("{}: bad param {token}", case.id));
    };
    let quoted = |q: char| expr.len() >= 2 && expr.starts_with(q) && expr.ends_with(q);
    let value = if quoted('\'') || quoted('"') {
        expr[1..expr.len() - 1].to_string()
    } else {
        case.unquoted_params.push(token.to_string());
        expr.to_string()
    };
    case.params.push((name.to_string(), value));
    Ok(())
}
