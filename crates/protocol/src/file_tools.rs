//! The file tools' arguments and results (SPEC §6.5, `group:fs`): `read`, `write`, `edit`,
//! `apply_patch`, with the reference's names (`path`, `offset`, `limit`, `content`, `oldText`,
//! `newText`, `input`) and the spellings its models also send (`file_path`, `old_string`,
//! `new_string`). An argument no tool takes is refused, naming those it does.
//!
//! `read` answers the text itself (what the model reads); the others answer an object with
//! `status: "ok"`, or a failure (`crate::session_tools::ToolFailure`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct ReadParams {
    /// The file: a path relative to your workspace (an absolute path inside it works too).
    #[serde(alias = "file_path")]
    pub path: String,
    /// The first line to read, counting from 1 (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// At most this many lines (default and most: 2000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Arguments of `write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct WriteParams {
    /// The file: a path relative to your workspace. Missing folders are made.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

/// Arguments of `edit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct EditParams {
    /// The file: a path relative to your workspace.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The exact text to replace, whitespace included; it must occur exactly once.
    #[serde(alias = "old_string")]
    pub old_text: String,
    /// The text to put in its place.
    #[serde(alias = "new_string")]
    pub new_text: String,
}

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct ApplyPatchParams {
    /// The patch, from `*** Begin Patch` to `*** End Patch`.
    #[serde(alias = "patch")]
    pub input: String,
}

/// What `write` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileWritten {
    /// `"ok"`.
    pub status: String,
    /// The file, relative to the workspace.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// Whether the file is new.
    pub created: bool,
}

/// What `edit` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEdited {
    /// `"ok"`.
    pub status: String,
    /// The file, relative to the workspace.
    pub path: String,
    /// The line the replaced text started on (from 1).
    pub line: u64,
}

/// What `apply_patch` did, file by file (paths relative to the workspace).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchApplied {
    /// `"ok"`.
    pub status: String,
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub deleted: Vec<String>,
}
