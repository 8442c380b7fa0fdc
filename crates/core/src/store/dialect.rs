//! The small layer under the store's neutral rules (`rules/`): what differs between SQLite and
//! PostgreSQL and nothing else.
//!
//! - [`Dialect`]: the spelling of a statement: placeholders (`?1` or `$1`), whether a list is
//!   bound as one array or as one parameter per item, and the names of a few functions.
//! - [`Param`]: a value to bind, typed even when it is NULL (PostgreSQL types every
//!   parameter), which each backend turns into its driver's value.
//! - [`Columns`]: a result row as each driver reads it, so a record is decoded once
//!   (`rules::rows`).
//!
//! Neither backend's transactions, locks or fences live here: they are how a backend keeps the
//! rules, not the rules.

use super::StoreError;

/// How a backend spells what the neutral statements need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect {
    /// What precedes a parameter's number: `?` (SQLite) or `$` (PostgreSQL).
    pub mark: char,
    /// Whether a list is one array parameter (`= ANY($1)`); otherwise one parameter per item
    /// (`IN (?1, ?2)`).
    pub arrays: bool,
    /// The position of a substring (`instr` / `strpos`): above 0 when found.
    pub find: &'static str,
    /// The first non-NULL of two values (`ifnull` / `coalesce`).
    pub ifnull: &'static str,
    /// A condition that always holds, to start a `WHERE` the filters extend.
    pub truth: &'static str,
    /// The larger of two non-NULL values (`max` / `GREATEST`).
    pub greatest: &'static str,
    /// A session row's place in its table: SQLite's `rowid`; PostgreSQL names none (0).
    pub rowid: &'static str,
}

/// SQLite's spelling.
pub(crate) const SQLITE: Dialect = Dialect {
    mark: '?',
    arrays: false,
    find: "instr",
    ifnull: "ifnull",
    truth: "1 = 1",
    greatest: "max",
    rowid: "s.rowid",
};

/// PostgreSQL's spelling.
pub(crate) const POSTGRES: Dialect = Dialect {
    mark: '$',
    arrays: true,
    find: "strpos",
    ifnull: "coalesce",
    truth: "TRUE",
    greatest: "GREATEST",
    rowid: "CAST(0 AS BIGINT)",
};

/// A value bound to a statement. `None` is a NULL of the variant's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Int(Option<i64>),
    Real(Option<f64>),
    Flag(Option<bool>),
    Text(Option<String>),
    /// A list of texts: one array (PostgreSQL) or one parameter per item (SQLite).
    Texts(Vec<String>),
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Self::Int(Some(v))
    }
}

impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Self {
        Self::Int(v)
    }
}

impl From<f64> for Param {
    fn from(v: f64) -> Self {
        Self::Real(Some(v))
    }
}

impl From<Option<f64>> for Param {
    fn from(v: Option<f64>) -> Self {
        Self::Real(v)
    }
}

impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Self::Flag(Some(v))
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Self::Text(Some(v.to_string()))
    }
}

impl From<String> for Param {
    fn from(v: String) -> Self {
        Self::Text(Some(v))
    }
}

impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Self {
        Self::Text(v)
    }
}

impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Self {
        Self::Text(v.map(str::to_string))
    }
}

/// A count as stored: a `u64` beyond `i64` is stored as `i64::MAX`.
pub(crate) fn count(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A statement built clause by clause in one dialect: each `?` in a clause becomes the
/// placeholder of the value pushed with it.
pub(crate) struct Statement {
    dialect: Dialect,
    pub sql: String,
    pub params: Vec<Param>,
}

impl Statement {
    pub(crate) fn new(dialect: Dialect, sql: String) -> Self {
        Self {
            dialect,
            sql,
            params: Vec::new(),
        }
    }

    /// The placeholder of parameter `n` (1-based).
    pub(crate) fn placeholder(&self, n: usize) -> String {
        format!("{}{n}", self.dialect.mark)
    }

    /// Appends `clause`, every `?` in it bound to `value`; answers the parameter's number.
    pub(crate) fn push(&mut self, clause: &str, value: impl Into<Param>) -> usize {
        self.params.push(value.into());
        let n = self.params.len();
        self.sql
            .push_str(&clause.replace('?', &self.placeholder(n)));
        n
    }

    /// Appends ` AND <column> IN (…)`: one array or one parameter per value.
    pub(crate) fn one_of(&mut self, column: &str, values: Vec<String>) {
        if self.dialect.arrays {
            self.push(&format!(" AND {column} = ANY(?)"), Param::Texts(values));
            return;
        }
        self.sql.push_str(&format!(" AND {column} IN ("));
        for (i, value) in values.into_iter().enumerate() {
            self.push(if i == 0 { "?" } else { ", ?" }, value);
        }
        self.sql.push(')');
    }

    /// Appends that `column` is none of `values`: one array or one condition per value.
    pub(crate) fn none_of(&mut self, column: &str, values: Vec<String>) {
        if values.is_empty() {
            return;
        }
        if self.dialect.arrays {
            self.push(&format!(" AND {column} <> ALL(?)"), Param::Texts(values));
            return;
        }
        for value in values {
            self.push(&format!(" AND {column} <> ?"), value);
        }
    }
}

/// A result row as a driver reads it: column `i` (0-based) as a plain value. A value of another
/// type is a backend error naming the column.
pub(crate) trait Columns {
    fn int(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn real(&self, i: usize) -> Result<Option<f64>, StoreError>;
    fn flag(&self, i: usize) -> Result<Option<bool>, StoreError>;
    /// Column `i`'s text borrowed from the row (nothing copied).
    fn text_ref(&self, i: usize) -> Result<Option<&str>, StoreError>;
    fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.text_ref(i)?.map(str::to_owned))
    }
}

/// The reads of [`Columns`] that want a value: NULL there is a backend error.
pub(crate) trait Required: Columns {
    fn req_int(&self, i: usize) -> Result<i64, StoreError> {
        self.int(i)?.ok_or_else(|| null(i))
    }
    fn req_real(&self, i: usize) -> Result<f64, StoreError> {
        self.real(i)?.ok_or_else(|| null(i))
    }
    fn req_flag(&self, i: usize) -> Result<bool, StoreError> {
        self.flag(i)?.ok_or_else(|| null(i))
    }
    fn req_text(&self, i: usize) -> Result<String, StoreError> {
        self.text(i)?.ok_or_else(|| null(i))
    }
    fn req_text_ref(&self, i: usize) -> Result<&str, StoreError> {
        self.text_ref(i)?.ok_or_else(|| null(i))
    }
    /// A stored count as a `u32` (a negative or oversized value is clamped).
    fn req_u32(&self, i: usize) -> Result<u32, StoreError> {
        Ok(self.req_int(i)?.clamp(0, i64::from(u32::MAX)) as u32)
    }
}

impl<C: Columns + ?Sized> Required for C {}

fn null(i: usize) -> StoreError {
    StoreError::Backend(format!("column {i} is NULL where a value is required"))
}

/// A neutral statement (written with `?N`) in dialect `d`: PostgreSQL's `$N`.
pub(crate) fn spell(sql: &str, d: Dialect) -> std::borrow::Cow<'_, str> {
    match d.mark {
        '?' => std::borrow::Cow::Borrowed(sql),
        mark => std::borrow::Cow::Owned(sql.replace('?', &mark.to_string())),
    }
}
