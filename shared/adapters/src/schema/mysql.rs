//! Schema introspection on MySQL and MariaDB: the connected database's base tables, from
//! `information_schema`, with their keys and a bounded sample.

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

use super::{error, schema, sorted, Cell, TableSchema, SAMPLE_ROWS};
use crate::error::Result;

const TABLES: &str = "SELECT table_name FROM information_schema.tables \
     WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'";

const COLUMNS: &str = "SELECT column_name, column_type FROM information_schema.columns \
     WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position";

const PRIMARY_KEY: &str = "SELECT column_name FROM information_schema.key_column_usage \
     WHERE table_schema = DATABASE() AND table_name = ? AND constraint_name = 'PRIMARY' \
     ORDER BY ordinal_position";

/// Foreign keys, one row per column in key order: constraint, column, parent, parent column.
const FOREIGN_KEYS: &str = "SELECT constraint_name, column_name, referenced_table_name, \
     referenced_column_name FROM information_schema.key_column_usage \
     WHERE table_schema = DATABASE() AND table_name = ? AND referenced_table_name IS NOT NULL \
     ORDER BY constraint_name, ordinal_position";

/// Every base table of the connected database, sorted by name.
pub async fn introspect_mysql(conn: &mut Conn, datasource: &str) -> Result<Vec<TableSchema>> {
    let names = text_rows(conn, TABLES, None)
        .await
        .map_err(|e| error(datasource, "listing tables", &e))?;
    let mut tables = Vec::with_capacity(names.len());
    for name in sorted(names) {
        let table = async {
            let columns = text_rows(conn, COLUMNS, Some(&name)).await?;
            let key = text_rows(conn, PRIMARY_KEY, Some(&name)).await?;
            let keys = text_rows(conn, FOREIGN_KEYS, Some(&name)).await?;
            // Every type casts to text (CHAR); NULL stays a null cell.
            let list: Vec<String> = (columns.iter())
                .map(|c| format!("CAST({} AS CHAR)", quote(&c[0])))
                .collect();
            let sql = format!(
                "SELECT {} FROM {} LIMIT {SAMPLE_ROWS}",
                list.join(", "),
                quote(&name)
            );
            let rows: Vec<Row> = conn.query(sql).await?;
            let sample: Vec<Vec<Cell>> = (rows.into_iter())
                .map(|row| {
                    (0..row.len())
                        .map(|i| match row.get_opt::<Option<String>, _>(i) {
                            Some(Ok(Some(text))) => Cell::Text(text),
                            _ => Cell::Null,
                        })
                        .collect()
                })
                .collect();
            let key = key.into_iter().map(|mut row| row.swap_remove(0)).collect();
            Ok::<_, mysql_async::Error>(schema(datasource, &name, columns, &sample, key, keys))
        };
        let table = table.await;
        tables.push(table.map_err(|e| error(datasource, &format!("table `{name}`"), &e))?);
    }
    Ok(tables)
}

/// The rows of a catalog query with at most one parameter, every column as text.
async fn text_rows(
    conn: &mut Conn,
    sql: &str,
    parameter: Option<&str>,
) -> std::result::Result<Vec<Vec<String>>, mysql_async::Error> {
    let rows: Vec<Row> = match parameter {
        Some(value) => conn.exec(sql, (value,)).await?,
        None => conn.query(sql).await?,
    };
    Ok((rows.into_iter())
        .map(|row| {
            (0..row.len())
                .map(|i| {
                    row.get_opt::<Option<String>, _>(i)
                        .and_then(|v| v.ok())
                        .flatten()
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect())
}

/// An identifier as MySQL text: in backquotes, inner backquotes doubled.
fn quote(identifier: &str) -> String {
    format!("`{}`", identifier.replace('`', "``"))
}
