//! SQLite's side of the dialect layer: the id newtypes and neutral [`Param`]s as SQLite values,
//! and a row read through [`Columns`].

use rusqlite::Row;
use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::StoreError;
use crate::store::dialect::{Columns, Param};

/// A statement's text (`format!`'s arguments) written once, at its first use, not at each call:
/// `once!("SELECT {COLUMNS} FROM runs WHERE run_id = ?1")` is a `&'static str`.
macro_rules! once {
    ($($arg:tt)*) => {{
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!($($arg)*));
        SQL.as_str()
    }};
}
pub(super) use once;

impl ToSql for SessionKey {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for SessionKey {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        String::column_result(value).map(SessionKey::from_canonical)
    }
}

impl ToSql for RunId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for RunId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        String::column_result(value).map(RunId::from_string)
    }
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Param::Int(v) => v.to_sql(),
            Param::Real(v) => v.to_sql(),
            Param::Flag(v) => v.to_sql(),
            Param::Text(v) => v.to_sql(),
            // The SQLite dialect binds a list item by item (`Dialect::arrays` is false).
            Param::Texts(_) => Err(rusqlite::Error::ToSqlConversionFailure(
                "a list is bound item by item on SQLite".into(),
            )),
        }
    }
}

impl Columns for Row<'_> {
    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(i)?)
    }

    fn real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        Ok(self.get(i)?)
    }

    fn flag(&self, i: usize) -> Result<Option<bool>, StoreError> {
        Ok(self.get(i)?)
    }

    fn text_ref(&self, i: usize) -> Result<Option<&str>, StoreError> {
        let value = self.get_ref(i)?;
        value.as_str_or_null().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), Box::new(e)).into()
        })
    }
}

/// The values of a neutral statement, to bind.
pub(super) fn bind(params: &[Param]) -> rusqlite::ParamsFromIter<std::slice::Iter<'_, Param>> {
    rusqlite::params_from_iter(params.iter())
}

/// The first row of `sql`, decoded by `decode` (a neutral decoder of `rules::rows`); `None`
/// when there is none.
pub(super) fn first<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
    decode: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    conn.prepare_cached(sql)?
        .query_and_then(params, decode)?
        .next()
        .transpose()
}

/// Every row of `sql`, decoded by `decode`.
pub(super) fn all<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
    decode: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    conn.prepare_cached(sql)?
        .query_and_then(params, decode)?
        .collect()
}
