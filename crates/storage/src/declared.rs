//! Each output column declared once (docs/FORMAT.md): [`declare_columns!`] turns one list of
//! fields — a Rust type and the column's name each — into the row struct, its columns' names, its
//! Arrow fields, the column builders of its writer and the reader of its rows, so a column is never
//! spelled twice. [`Column`] says how a Rust type is stored; [`ReadColumn`] how it is read back.
//! An arm, a decision or an exit reason is core's enum in a row and the string of the output
//! contract in the file; a string that is none of them is refused with its row and column named.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};
use critbench_core::{Arm, ExitReason};

use crate::columns::{Columns, TableError};
use crate::critique_columns::{CritiqueBuilders, CritiqueColumns, TEXT_BYTES_PER_ROW};
use crate::schema::{int32, int64};

/// How a row field's Rust type is stored: in one column, or in several (a critique's, declared
/// `flattened`).
pub(crate) trait Column {
    type Builder;
    /// The Arrow fields of this type's columns; `name` is the column's (unused when flattened).
    fn fields(name: &str) -> Vec<Field>;
    /// A builder with room for `rows` values.
    fn builder(rows: usize) -> Self::Builder;
    fn append(&self, builder: &mut Self::Builder);
    /// Adds the columns appended since the last call to `columns`.
    fn finish(builder: &mut Self::Builder, columns: &mut Vec<ArrayRef>);
}

/// A field stored in several columns (declared `flattened`): their names, in order.
pub(crate) trait Flattened {
    const NAMES: &'static [&'static str];
}

impl Column for CritiqueColumns {
    type Builder = CritiqueBuilders;
    fn fields(_: &str) -> Vec<Field> {
        CritiqueColumns::fields().into()
    }
    fn builder(rows: usize) -> CritiqueBuilders {
        CritiqueBuilders::with_capacity(rows)
    }
    fn append(&self, builder: &mut CritiqueBuilders) {
        builder.append(self);
    }
    fn finish(builder: &mut CritiqueBuilders, columns: &mut Vec<ArrayRef>) {
        columns.extend(builder.finish());
    }
}

impl Flattened for CritiqueColumns {
    const NAMES: &'static [&'static str] = &CritiqueColumns::NAMES;
}

impl ReadColumn<'_> for CritiqueColumns {
    fn read(c: &Columns<'_>, _: &str, _: usize) -> Result<Vec<Self>, TableError> {
        CritiqueColumns::read(c)
    }
}

/// A critique a row may borrow (a writer's, from the round it records) or own (a reader's).
impl Column for Cow<'_, CritiqueColumns> {
    type Builder = CritiqueBuilders;
    fn fields(name: &str) -> Vec<Field> {
        <CritiqueColumns as Column>::fields(name)
    }
    fn builder(rows: usize) -> CritiqueBuilders {
        <CritiqueColumns as Column>::builder(rows)
    }
    fn append(&self, builder: &mut CritiqueBuilders) {
        builder.append(self);
    }
    fn finish(builder: &mut CritiqueBuilders, columns: &mut Vec<ArrayRef>) {
        <CritiqueColumns as Column>::finish(builder, columns);
    }
}

impl Flattened for Cow<'_, CritiqueColumns> {
    const NAMES: &'static [&'static str] = &CritiqueColumns::NAMES;
}

impl ReadColumn<'_> for Cow<'_, CritiqueColumns> {
    fn read(c: &Columns<'_>, _: &str, _: usize) -> Result<Vec<Self>, TableError> {
        Ok(CritiqueColumns::read(c)?.into_iter().map(Cow::Owned).collect())
    }
}

/// How a column is read back into a row field's Rust type; `'a` is the batch's, which a borrowed
/// field (`&'a str`) borrows its text from.
pub(crate) trait ReadColumn<'a>: Sized {
    /// The column `name` of `c`, row by row; `first_row` is the batch's first row in its file, so
    /// an error names the row of the file.
    fn read(c: &Columns<'a>, name: &str, first_row: usize) -> Result<Vec<Self>, TableError>;
}

macro_rules! text_column {
    ($ty:ty, $nullable:expr, |$value:ident, $builder:ident| $append:expr) => {
        impl Column for $ty {
            type Builder = StringBuilder;
            fn fields(name: &str) -> Vec<Field> {
                vec![Field::new(name, DataType::Utf8, $nullable)]
            }
            fn builder(rows: usize) -> StringBuilder {
                StringBuilder::with_capacity(rows, rows * TEXT_BYTES_PER_ROW)
            }
            fn append(&self, $builder: &mut StringBuilder) {
                let $value = self;
                $append
            }
            fn finish(builder: &mut StringBuilder, columns: &mut Vec<ArrayRef>) {
                columns.push(Arc::new(builder.finish()));
            }
        }
    };
}

text_column!(String, false, |v, b| b.append_value(v));
text_column!(Option<String>, true, |v, b| b.append_option(v.as_deref()));
text_column!(&str, false, |v, b| b.append_value(v));
text_column!(Option<&str>, true, |v, b| b.append_option(*v));
text_column!(Arm, false, |v, b| b.append_value(v.as_str()));
text_column!(ExitReason, false, |v, b| b.append_value(v.as_str()));
text_column!(Option<ExitReason>, true, |v, b| b.append_option(v.map(ExitReason::as_str)));

macro_rules! primitive_column {
    ($ty:ty, $builder_ty:ty, $data_type:expr, $nullable:expr, |$value:ident, $builder:ident| $append:expr) => {
        impl Column for $ty {
            type Builder = $builder_ty;
            fn fields(name: &str) -> Vec<Field> {
                vec![Field::new(name, $data_type, $nullable)]
            }
            fn builder(rows: usize) -> $builder_ty {
                <$builder_ty>::with_capacity(rows)
            }
            fn append(&self, $builder: &mut $builder_ty) {
                let $value = self;
                $append
            }
            fn finish(builder: &mut $builder_ty, columns: &mut Vec<ArrayRef>) {
                columns.push(Arc::new(builder.finish()));
            }
        }
    };
}

// Whole numbers are stored signed; a count too large for its column saturates.
primitive_column!(u32, Int32Builder, DataType::Int32, false, |v, b| b.append_value(int32(*v)));
primitive_column!(u64, Int64Builder, DataType::Int64, false, |v, b| b.append_value(int64(*v)));
primitive_column!(Option<u64>, Int64Builder, DataType::Int64, true, |v, b| b.append_option(v.map(int64)));
primitive_column!(f64, Float64Builder, DataType::Float64, false, |v, b| b.append_value(*v));
primitive_column!(Option<f64>, Float64Builder, DataType::Float64, true, |v, b| b.append_option(*v));
primitive_column!(bool, BooleanBuilder, DataType::Boolean, false, |v, b| b.append_value(*v));
primitive_column!(Option<bool>, BooleanBuilder, DataType::Boolean, true, |v, b| b.append_option(*v));

impl ReadColumn<'_> for String {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.required_text(name)
    }
}

impl ReadColumn<'_> for Option<String> {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.text(name)
    }
}

impl<'a> ReadColumn<'a> for &'a str {
    fn read(c: &Columns<'a>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        let array = c.text_array(name)?;
        Ok((0..array.len()).map(|i| array.value(i)).collect())
    }
}

impl<'a> ReadColumn<'a> for Option<&'a str> {
    fn read(c: &Columns<'a>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        let array = c.nullable_text_array(name)?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i))).collect())
    }
}

impl ReadColumn<'_> for u32 {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.int32(name)
    }
}

impl ReadColumn<'_> for u64 {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.int64(name)?.into_iter().map(|v| v.ok_or_else(|| TableError::Null(name.to_string()))).collect()
    }
}

impl ReadColumn<'_> for Option<u64> {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.int64(name)
    }
}

impl ReadColumn<'_> for f64 {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.required_float(name)
    }
}

impl ReadColumn<'_> for Option<f64> {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.float(name)
    }
}

impl ReadColumn<'_> for bool {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.required_boolean(name)
    }
}

impl ReadColumn<'_> for Option<bool> {
    fn read(c: &Columns<'_>, name: &str, _: usize) -> Result<Vec<Self>, TableError> {
        c.boolean(name)
    }
}

/// A value of a text column that must be one of a fixed set of strings (an arm, an exit reason).
pub trait Label: Sized + Copy + 'static {
    /// What a value is, for messages: "an arm".
    const WHAT: &'static str;
    /// Every value, in the order messages list them.
    const ALL: &'static [Self];
    /// The value as the column holds it.
    fn as_str(self) -> &'static str;
    /// The value `text` holds, if any.
    fn parse(text: &str) -> Option<Self>;
}

impl Label for Arm {
    const WHAT: &'static str = "an arm";
    const ALL: &'static [Arm] = &Arm::ALL;
    fn as_str(self) -> &'static str {
        Arm::as_str(self)
    }
    fn parse(text: &str) -> Option<Arm> {
        Arm::parse(text)
    }
}

impl Label for ExitReason {
    const WHAT: &'static str = "an exit reason";
    const ALL: &'static [ExitReason] = &ExitReason::ALL;
    fn as_str(self) -> &'static str {
        ExitReason::as_str(self)
    }
    fn parse(text: &str) -> Option<ExitReason> {
        ExitReason::parse(text)
    }
}

/// `text`, the value of `name` in row `row`, as a `L`; an unknown string is an error that names the
/// row, the column and the strings it may hold (never a default).
pub fn parse_label<L: Label>(text: &str, name: &str, row: usize) -> Result<L, TableError> {
    L::parse(text).ok_or_else(|| {
        let valid: Vec<&str> = L::ALL.iter().map(|label| label.as_str()).collect();
        TableError::NotALabel {
            row,
            column: name.to_string(),
            text: text.to_string(),
            what: L::WHAT,
            valid: valid.join(", "),
        }
    })
}

impl<L: Label> ReadColumn<'_> for L {
    fn read(c: &Columns<'_>, name: &str, first_row: usize) -> Result<Vec<Self>, TableError> {
        let array = c.text_array(name)?;
        (0..array.len()).map(|i| parse_label(array.value(i), name, first_row + i)).collect()
    }
}

/// Declares a table's row struct and everything derived from its one list of columns:
///
/// - the struct, with the fields as listed (each `field: Type = "column"`, or `= flattened` for
///   a field kept in several columns of its own, a critique's); a struct with a lifetime
///   (`pub struct TrajectoryRow<'a>`) may borrow its text (`&'a str`), so a writer copies each
///   value once, into its column;
/// - `names()` (the columns' names in order) and `COLUMNS` (each field's column name, as a struct
///   of the name given after `names:`, so a reader asks for `OutcomeRow::COLUMNS.final_draft`);
/// - `fields()`, the Arrow fields in order;
/// - the builders struct (the name after `builders:`): `with_capacity`, `append` a row, `finish`
///   the columns appended so far;
/// - `read_batch`, the rows of a batch (a borrowed field borrows from the batch): every column
///   must be there, as this schema version writes it.
macro_rules! declare_columns {
    // With a reader: everything else, then the reader.
    (
        $(#[$meta:meta])*
        pub struct $row:ident $(<$lt:lifetime>)? {
            $( $(#[$field_meta:meta])* pub $field:ident: $ty:ty = $column:tt ),* $(,)?
        }
        names: $names:ident,
        builders: $builders:ident,
        reader: $read:ident,
    ) => {
        $crate::declared::declare_columns! {
            $(#[$meta])*
            pub struct $row $(<$lt>)? {
                $( $(#[$field_meta])* pub $field: $ty = $column ),*
            }
            names: $names,
            builders: $builders,
        }

        impl $(<$lt>)? $row $(<$lt>)? {
            /// The rows of one batch; `first_row` is its first row's position in the file.
            pub(crate) fn $read(
                c: &$crate::declared::declare_columns!(@columns $($lt)?),
                first_row: usize,
            ) -> Result<Vec<Self>, $crate::columns::TableError> {
                let rows = c.0.num_rows();
                $(
                    let mut $field =
                        $crate::declared::declare_columns!(@read c, $ty, $column, first_row)
                            .into_iter();
                )*
                Ok((0..rows).map(|_| $row { $( $field: $field.next().expect("a value for every row"), )* }).collect())
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $row:ident $(<$lt:lifetime>)? {
            $( $(#[$field_meta:meta])* pub $field:ident: $ty:ty = $column:tt ),* $(,)?
        }
        names: $names:ident,
        builders: $builders:ident,
    ) => {
        $(#[$meta])*
        pub struct $row $(<$lt>)? {
            $(
                $(#[$field_meta])*
                #[doc = ""]
                #[doc = $crate::declared::declare_columns!(@doc $column)]
                pub $field: $ty,
            )*
        }

        #[doc = concat!("The name of each column of [`", stringify!($row), "`], by field (a flattened field's, in order).")]
        #[derive(Clone, Copy, Debug)]
        pub struct $names {
            $(
                #[doc = concat!("The column(s) of `", stringify!($field), "`.")]
                pub $field: $crate::declared::declare_columns!(@name_type $column),
            )*
        }

        impl $(<$lt>)? $row $(<$lt>)? {
            /// Each field's column name.
            pub const COLUMNS: $names = $names { $( $field: $crate::declared::declare_columns!(@name $ty, $column), )* };

            /// The names of the columns, in the order they are written.
            // One push or extend per field: a flattened field adds several names.
            #[allow(clippy::vec_init_then_push)]
            pub fn names() -> Vec<&'static str> {
                let mut names = Vec::new();
                $( $crate::declared::declare_columns!(@push_names names, $ty, $column); )*
                names
            }

            /// The columns' Arrow fields, in order.
            pub(crate) fn fields() -> Vec<arrow_schema::Field> {
                let mut fields = Vec::new();
                $( fields.extend(<$ty as $crate::declared::Column>::fields($crate::declared::declare_columns!(@column $column))); )*
                fields
            }
        }

        #[doc = concat!("Builds the columns of [`", stringify!($row), "`]s a row at a time.")]
        // A row that borrows gives its builders its lifetime, only to name its fields' types: the
        // builders own what they hold and take rows of any lifetime.
        pub(crate) struct $builders $(<$lt>)? {
            $( $field: <$ty as $crate::declared::Column>::Builder, )*
        }

        impl $(<$lt>)? $builders $(<$lt>)? {
            /// Builders with room for `rows` rows.
            pub(crate) fn with_capacity(rows: usize) -> Self {
                $builders { $( $field: <$ty as $crate::declared::Column>::builder(rows), )* }
            }

            pub(crate) fn append(&mut self, row: &$crate::declared::declare_columns!(@any $row $($lt)?)) {
                $( $crate::declared::Column::append(&row.$field, &mut self.$field); )*
            }

            /// The columns of the rows appended since the last call, in the order of `names()`.
            pub(crate) fn finish(&mut self) -> Vec<arrow_array::ArrayRef> {
                let mut columns = Vec::new();
                $( <$ty as $crate::declared::Column>::finish(&mut self.$field, &mut columns); )*
                columns
            }
        }
    };
    (@columns $lt:lifetime) => { $crate::columns::Columns<$lt> };
    (@columns) => { $crate::columns::Columns<'_> };
    (@any $row:ident $lt:lifetime) => { $row<'_> };
    (@any $row:ident) => { $row };
    (@doc flattened) => { "Stored in columns of its own (docs/FORMAT.md)." };
    (@doc $column:literal) => { concat!("The `", $column, "` column (docs/FORMAT.md).") };
    (@name_type flattened) => { &'static [&'static str] };
    (@name_type $column:literal) => { &'static str };
    (@name $ty:ty, flattened) => { <$ty as $crate::declared::Flattened>::NAMES };
    (@name $ty:ty, $column:literal) => { $column };
    (@column flattened) => { "" };
    (@column $column:literal) => { $column };
    (@push_names $names:ident, $ty:ty, flattened) => { $names.extend_from_slice(<$ty as $crate::declared::Flattened>::NAMES) };
    (@push_names $names:ident, $ty:ty, $column:literal) => { $names.push($column) };
    (@read $c:ident, $ty:ty, $column:tt, $first_row:ident) => {
        <$ty as $crate::declared::ReadColumn<'_>>::read($c, $crate::declared::declare_columns!(@column $column), $first_row)?
    };
}

pub(crate) use declare_columns;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_label_names_its_row_column_and_the_valid_strings() {
        assert_eq!(parse_label::<Arm>("no-feedback", "arm", 0).unwrap(), Arm::NoFeedback);
        assert_eq!(
            parse_label::<Arm>("feedbak", "arm", 41).unwrap_err().to_string(),
            "row 41: column `arm` holds `feedbak`, which is not an arm (feedback, no-feedback, single, feedback+memory, placebo, resample, oracle)"
        );
        assert!(
            parse_label::<ExitReason>("", "exit_reason", 0).unwrap_err().to_string().contains("not an exit reason")
        );
    }
}
