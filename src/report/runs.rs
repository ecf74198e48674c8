//! `flakelab runs`: a session's runs for other tools, one run at a time —
//! whole `flakelab.run/1` records as JSON Lines, or one CSV row per
//! (run, test) with RFC 4180 quoting. Pure: a run in, text out.

use crate::record::{RunRecord, TestOutcome, RUN_SCHEMA_V1};
use crate::store::RunView;

/// The CSV columns, in order (the header line without its newline).
pub const CSV_COLUMNS: [&str; 17] = [
    "session",
    "run",
    "index",
    "cell",
    "replicate",
    "seed",
    "started_at",
    "duration_s",
    "run_outcome",
    "exit_code",
    "test",
    "family",
    "test_outcome",
    "passed_on_rerun",
    "retries",
    "signature_match",
    "message",
];

/// The CSV header line, with its newline.
pub fn csv_header() -> String {
    let mut line = CSV_COLUMNS.join(",");
    line.push('\n');
    line
}

/// The run's whole record as one `flakelab.run/1` line (fields in the
/// record's order), with its newline.
pub fn json_line(mut record: RunRecord) -> serde_json::Result<String> {
    record.schema = RUN_SCHEMA_V1.to_string();
    let mut line = serde_json::to_string(&record)?;
    line.push('\n');
    Ok(line)
}

/// The run's CSV rows appended to `out`: one per test its report listed
/// (first attempts), or one with the test columns empty when it carried
/// no per-test data.
pub fn csv_rows(run: &RunView<'_>, out: &mut String) {
    let run_part = [
        run.session().to_string(),
        run.id().into_owned(),
        run.index().to_string(),
        run.cell().to_string(),
        run.replicate().to_string(),
        run.seed().to_string(),
        run.started_at().to_string(),
        run.duration_s().to_string(),
        run.outcome().as_str().to_string(),
        run.exit_code().map(|c| c.to_string()).unwrap_or_default(),
    ];
    let mut any = false;
    for t in run.tests() {
        any = true;
        push_fields(out, &run_part);
        out.push(',');
        push_fields(
            out,
            &[
                t.id,
                t.family(),
                test_outcome(t.outcome),
                if t.passed_on_rerun { "true" } else { "false" },
                &t.retries.to_string(),
                match t.signature_match {
                    Some(true) => "true",
                    Some(false) => "false",
                    None => "",
                },
                t.message.unwrap_or(""),
            ],
        );
        out.push('\n');
    }
    if !any {
        push_fields(out, &run_part);
        out.push_str(",,,,,,,\n");
    }
}

/// A test outcome's name in records (`pass`, `fail`, `error`, `skip`).
fn test_outcome(o: TestOutcome) -> &'static str {
    match o {
        TestOutcome::Pass => "pass",
        TestOutcome::Fail => "fail",
        TestOutcome::Error => "error",
        TestOutcome::Skip => "skip",
    }
}

fn push_fields<S: AsRef<str>>(out: &mut String, fields: &[S]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(out, f.as_ref());
    }
}

/// One CSV field (RFC 4180): quoted, with its quotes doubled, when it holds
/// a comma, a quote or a line break, or starts or ends with a space.
pub fn push_field(out: &mut String, field: &str) {
    let quote =
        field.contains([',', '"', '\n', '\r']) || field.starts_with(' ') || field.ends_with(' ');
    if !quote {
        out.push_str(field);
        return;
    }
    out.push('"');
    for c in field.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An RFC 4180 reader: the records of `text`.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => field.push(c),
            }
        }
        rows
    }

    #[test]
    fn fields_that_need_it_are_quoted_and_plain_ones_are_not() {
        let cases = [
            ("tests::plain", "tests::plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
            ("cr\rhere", "\"cr\rhere\""),
            (" padded", "\" padded\""),
            ("", ""),
        ];
        for (field, want) in cases {
            let mut out = String::new();
            push_field(&mut out, field);
            assert_eq!(out, want, "{field:?}");
        }
    }

    #[test]
    fn a_run_without_per_test_data_is_one_row_with_empty_test_columns() {
        let mut r = crate::record::fixture::run("s", 0, "baseline");
        r.tests.clear();
        let mut out = String::new();
        csv_rows(&RunView::of(&r), &mut out);
        let rows = parse(&out);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].len(), CSV_COLUMNS.len(), "{out}");
        assert_eq!(rows[0][1], "s.00000");
        assert!(rows[0][10..].iter().all(String::is_empty), "{out}");
    }

    proptest! {
        #[test]
        fn any_test_id_and_message_read_back_exactly(
            id in "[a-z,\" \n\r:é]{1,12}",
            message in "[a-z,\"\n ]{0,12}",
        ) {
            let mut r = crate::record::fixture::run("s", 3, "tz=UTC");
            r.tests = vec![crate::record::TestRecord {
                id: id.clone(),
                family: None,
                outcome: crate::record::TestOutcome::Fail,
                passed_on_rerun: false,
                retries: 0,
                signature: None,
                message: Some(message.clone()),
                signature_match: None,
                signature_pattern: None,
            }];
            let mut out = csv_header();
            csv_rows(&RunView::of(&r), &mut out);
            let rows = parse(&out);
            prop_assert_eq!(rows.len(), 2);
            prop_assert_eq!(rows[1].len(), CSV_COLUMNS.len());
            prop_assert_eq!(&rows[1][10], &id);
            prop_assert_eq!(&rows[1][11], &id);
            prop_assert_eq!(&rows[1][12], "fail");
            prop_assert_eq!(&rows[1][16], &message);
        }
    }
}
