//! JSON Logic in classic mode against jsonlogic.com's official tests and the community
//! compatibility suites.

mod common;

use common::{json_eq, read_json, shared_dir};
use mcpflow_expr::Logic;
use serde_json::Value as Json;

#[test]
fn official_tests_all_pass() {
    let path = shared_dir().join("conformance/jsonlogic-tests.json");
    let Json::Array(cases) = read_json(&path) else {
        panic!("{} is not an array", path.display());
    };
    let mut total = 0;
    let mut failures = Vec::new();
    for case in &cases {
        // Strings are section comments.
        let Json::Array(parts) = case else { continue };
        let [rule, data, expected] = parts.as_slice() else {
            panic!("malformed case {case}");
        };
        total += 1;
        let got = Logic::compile_classic(rule).and_then(|l| l.evaluate_json(data));
        match got {
            Ok(v) if json_eq(&v, expected, false) => {}
            other => failures.push(format!(
                "{rule} on {data}: expected {expected}, got {other:?}"
            )),
        }
    }
    println!(
        "jsonlogic.com tests: {}/{total} pass",
        total - failures.len()
    );
    assert_eq!(total, 278, "the official suite has 278 tests");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

/// The score each community suite reached; none may fall below it.
///
/// The suites beyond `compatible.json` test the newer community dialect of JSON Logic, which
/// differs from classic JSON Logic (json-logic-js, which mcpGraph runs). Not supported, by
/// choice: the operators `val`, `exists`, `??`, `throw`, `try` (and the laziness tests that
/// use `throw`); errors where classic JSON Logic yields `NaN`/`null` (arithmetic on
/// non-numbers, division by zero) or ignores extra and missing operands (`{"<": [1]}`,
/// `{"and": []}`, a non-array operand); arrays compared as their string form (`[1] < 5`,
/// which is JavaScript's answer); scoped `var` paths (`{"var": "../x"}`) and `[key, ...]`
/// paths.
const COMPAT_MINIMUM: &[(&str, usize)] = &[
    ("compatible.json", 278),
    ("arithmetic/plus.json", 19),
    ("arithmetic/plus.extra.json", 0),
    ("arithmetic/multiply.json", 13),
    ("arithmetic/multiply.extra.json", 0),
    ("arithmetic/minus.json", 13),
    ("arithmetic/minus.extra.json", 1),
    ("arithmetic/divide.json", 6),
    ("arithmetic/divide.extra.json", 1),
    ("arithmetic/modulo.json", 12),
    ("arithmetic/modulo.extra.json", 2),
    ("comparison/greaterThan.json", 24),
    ("comparison/greaterThanEquals.json", 17),
    ("comparison/lessThan.json", 35),
    ("comparison/lessThanEquals.json", 13),
    ("comparison/softEquals.json", 24),
    ("comparison/softNotEquals.json", 23),
    ("comparison/strictEquals.json", 26),
    ("comparison/strictNotEquals.json", 26),
    ("control/and.json", 20),
    ("control/if.json", 38),
    ("control/or.json", 19),
    ("control/not.json", 23),
    ("control/doublebang.json", 23),
    ("string/in.json", 8),
    ("string/cat.json", 9),
    ("string/substr.json", 12),
    ("array/map.json", 12),
    ("array/filter.json", 10),
    ("array/reduce.json", 8),
    ("array/merge.json", 8),
    ("array/all.json", 10),
    ("array/some.json", 11),
    ("array/none.json", 11),
    ("truthiness.json", 9),
    ("additional.json", 0),
    ("coalesce.json", 0),
    ("chained.json", 2),
    ("iterators.extra.json", 17),
    ("exists.json", 0),
    ("scopes.json", 0),
    ("throw.json", 3),
    ("try.json", 8),
    ("try.extra.json", 0),
    ("val.json", 0),
    ("val.extra.json", 0),
    ("val-compat.json", 0),
    ("var.extra.json", 12),
];

#[test]
fn compat_suites_score() {
    let dir = shared_dir().join("conformance/jsonlogic-compat-suites");
    let Json::Array(files) = read_json(&dir.join("index.json")) else {
        panic!("index.json is not an array");
    };
    let (mut all_pass, mut all_total) = (0, 0);
    let mut report = Vec::new();
    for file in files.iter().filter_map(Json::as_str) {
        let Json::Array(cases) = read_json(&dir.join(file)) else {
            panic!("{file} is not an array");
        };
        let (mut pass, mut total) = (0, 0);
        for case in cases.iter().filter(|c| c.is_object()) {
            total += 1;
            let rule = &case["rule"];
            let data = case.get("data").unwrap_or(&Json::Null);
            let approx = case.get("decimal").is_some();
            let got = Logic::compile_classic(rule).and_then(|l| l.evaluate_json(data));
            let ok = match (case.get("result"), case.get("error"), &got) {
                (Some(expected), _, Ok(v)) => json_eq(v, expected, approx),
                (None, Some(_), Err(_)) => true,
                _ => false,
            };
            if ok {
                pass += 1;
            } else if std::env::var_os("COMPAT_VERBOSE").is_some() {
                println!("  {file}: {} -> {got:?}", case["description"]);
            }
        }
        println!("{file}: {pass}/{total}");
        all_pass += pass;
        all_total += total;
        report.push((file.to_owned(), pass));
    }
    println!("compat suites: {all_pass}/{all_total}");
    let compatible = report
        .iter()
        .find(|(f, _)| f == "compatible.json")
        .map(|r| r.1);
    assert_eq!(
        compatible,
        Some(278),
        "compatible.json is classic JSON Logic: all must pass"
    );
    for (file, min) in COMPAT_MINIMUM {
        let got = report.iter().find(|(f, _)| f == file).map_or(0, |r| r.1);
        assert!(
            got >= *min,
            "{file}: {got} pass, fewer than the {min} reached before"
        );
    }
}
