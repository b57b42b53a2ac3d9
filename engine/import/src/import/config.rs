//! `import/<service_id>.toml`: how one service's OpenAPI documents become catalog tools,
//! and every hand-authored change to what the importer generates. The importer applies
//! this file on every run; generated files are never edited by hand.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// The import file of one service.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ImportFile {
    /// Service id; must match the file name and `catalog/<id>/`.
    pub service: String,
    /// The OpenAPI documents, relative to the upstream descriptions folder
    /// (`--specs-dir`).
    #[serde(default)]
    pub specs: Vec<String>,
    /// Generated file name inside `catalog/<id>/`.
    #[serde(default = "default_output")]
    pub output: String,
    /// How tool names are formed.
    #[serde(default)]
    pub naming: Naming,
    /// How arguments are formed.
    #[serde(default)]
    pub arguments: Arguments,
    /// What is kept of the upstream prose.
    #[serde(default)]
    pub text: Text,
    /// Tables deep-merged into generated tools, before `operations`.
    #[serde(default)]
    pub defaults: Defaults,
    /// Operations deliberately left out: `"METHOD /path"` or operation id -> reason.
    #[serde(default)]
    pub skip: BTreeMap<String, String>,
    /// Per-operation overrides, keyed by `"METHOD /path"` or operation id: a partial tool
    /// table deep-merged over the generated one (tables merge, other values replace).
    /// `notes = "..."` is appended to the generated description instead.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub operations: BTreeMap<String, toml::Table>,
}

fn default_output() -> String {
    "openapi.toml".into()
}

/// What the importer keeps of the documents' prose (`import::prose`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Text {
    /// Paragraphs that open this way are the document's boilerplate (credit notes, key
    /// scopes), not what the operation does: left out of descriptions and the kept text.
    #[serde(default)]
    pub skip_paragraphs: Vec<String>,
}

/// Naming rules.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Naming {
    /// Prefixes removed from operation ids before snake-casing.
    #[serde(default)]
    pub strip_prefix: Vec<String>,
    /// Put before every generated name (leads: `leads_`).
    #[serde(default)]
    pub prefix: String,
    /// Put the document's file name before every generated name (crm: `businesses_`),
    /// for services whose documents reuse operation ids.
    #[serde(default)]
    pub prefix_with_file: bool,
    /// Name from `<method>_<path>` even when the operation has an id (leads).
    #[serde(default)]
    pub from_method_path: bool,
    /// Leave the method out of names made from paths (scraper: all reads).
    #[serde(default)]
    pub path_only: bool,
    /// Path prefixes removed before a path becomes a name (`/v1`).
    #[serde(default)]
    pub strip_path_prefix: Vec<String>,
    /// Where titles come from (then `title_prefix` is put before them).
    #[serde(default)]
    pub title: TitleStyle,
    /// Put before every generated title (hosting: `Hosting `).
    #[serde(default)]
    pub title_prefix: String,
}

/// How generated titles are formed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TitleStyle {
    /// The operation's summary.
    #[default]
    Summary,
    /// Hosting's form: `DNS_getDNSRecordsV1` -> `DNS Get Dnsrecords V1`.
    OperationIdGroups,
    /// Words of a camelCase id, acronyms kept: `get3DModelsByUserId` -> `Get 3D Models By User Id`.
    OperationIdWords,
}

/// Argument rules.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Arguments {
    /// Header parameters that carry credentials and are never arguments.
    #[serde(default)]
    pub drop_headers: Vec<String>,
    /// Nested `$ref`s expanded in argument and output schemas.
    #[serde(default = "default_depth")]
    pub schema_depth: usize,
    /// Path parameters as top-level arguments (`flat`) or inside one `path_params`
    /// object (`object`, the imagegen and payments contract).
    #[serde(default)]
    pub path_params: PathParams,
    /// `flat` (the default) or `contract`: the leads shared input contract, where every
    /// tool takes exactly `body`, `params`, `path_params`, `compact`, `max_items`,
    /// `include_raw` and `confirm`.
    #[serde(default)]
    pub style: ArgumentStyle,
    /// With `query_body`: the parameter name that carries the location.
    #[serde(default)]
    pub location_arg: Option<String>,
    /// Nested `$ref`s expanded in output schemas; 0 leaves outputs out (payments: the
    /// answer objects are large and described upstream).
    #[serde(default = "default_output_depth")]
    pub output_depth: usize,
}

fn default_output_depth() -> usize {
    3
}

/// The shape of generated arguments.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentStyle {
    /// Parameters and body properties by name.
    #[default]
    Flat,
    /// `body`, `params`, `path_params`, `compact`, `max_items`, `include_raw`, `confirm`.
    Contract,
    /// The crm rules: path parameters by name, query parameters in one `query` object,
    /// the body as `body`; a `location_arg` path or query parameter is filled from that
    /// argument or the runtime location (`ctx.location_id`).
    QueryBody,
}

/// Where path parameters go in the arguments.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathParams {
    /// `{"id": "..."}`.
    #[default]
    Flat,
    /// `{"path_params": {"id": "..."}}`.
    Object,
}

impl Default for Arguments {
    fn default() -> Self {
        Self {
            drop_headers: Vec::new(),
            schema_depth: default_depth(),
            path_params: PathParams::Flat,
            style: ArgumentStyle::Flat,
            location_arg: None,
            output_depth: default_output_depth(),
        }
    }
}

fn default_depth() -> usize {
    4
}

/// Tables merged into every tool, every read tool, every write tool.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Defaults {
    /// Every tool.
    #[serde(default)]
    #[schemars(with = "serde_json::Value")]
    pub all: toml::Table,
    /// Read tools.
    #[serde(default)]
    #[schemars(with = "serde_json::Value")]
    pub read: toml::Table,
    /// Write tools.
    #[serde(default)]
    #[schemars(with = "serde_json::Value")]
    pub write: toml::Table,
}

/// Deep merge: tables merge key by key, anything else in `over` replaces.
pub fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}
