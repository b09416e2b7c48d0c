//! Compiling a script: parse its source in one of the two accepted forms into module bytecode,
//! then evaluate that bytecode once the way a call will, to check that it yields a function.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::isolate::{Compiled, Isolate, Shape, callable};
use crate::source::{self, EXPRESSION_PREFIX, FACTORY_PREFIX, Position};
use crate::{SandboxError, SandboxOptions};
use rquickjs::{Module, WriteOptions};

/// Compiles `source` and checks that it yields a function, on the calling thread.
pub(crate) fn compile(
    options: &SandboxOptions,
    name: &str,
    source: &str,
) -> Result<Compiled, SandboxError> {
    if source.trim().is_empty() {
        return Err(SandboxError::NotAFunction {
            found: "nothing: the source is empty".into(),
        });
    }
    // The name becomes a C string inside QuickJS.
    let name: String = name.chars().filter(|&c| c != '\0').collect();
    let compiled = parse(options, &name, source)?;
    let checker = Isolate::for_calls(options)?;
    checker.budget.arm(options.cpu_time);
    let env = checker.env(&compiled.name, compiled.prefix);
    checker
        .context
        .with(|ctx| callable(&ctx, &compiled, &env, true).map(drop))?;
    Ok(compiled)
}

/// Tries the expression form, then the module form; if neither parses, reports the error of the
/// form that got further into the source, which is the form the author meant.
fn parse(options: &SandboxOptions, name: &str, source: &str) -> Result<Compiled, SandboxError> {
    let parser = Isolate::for_parsing(options)?;
    parser.budget.arm(options.cpu_time);
    let prefix = EXPRESSION_PREFIX.len();
    let compiled = |bytecode, prefix, shape| {
        static IDS: AtomicU64 = AtomicU64::new(0);
        Compiled {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            name: name.to_owned(),
            bytecode,
            prefix,
            shape,
        }
    };
    match to_bytecode(&parser, name, &source::wrap_factory(source)) {
        Ok(factory) if to_bytecode(&parser, name, &source::wrap_element(source)).is_ok() => {
            return Ok(compiled(factory, FACTORY_PREFIX.len(), Shape::Factory));
        }
        Err(ParseFailure::Other(e)) => return Err(e),
        // Not one expression, or one that needs the module's top level (`await`): below.
        Ok(_) | Err(ParseFailure::Syntax { .. }) => {}
    }
    let expression_error = match to_bytecode(&parser, name, &source::wrap_expression(source)) {
        Ok(bytecode) => return Ok(compiled(bytecode, prefix, Shape::Module)),
        Err(ParseFailure::Other(e)) => return Err(e),
        Err(ParseFailure::Syntax { at, message }) => (at, message),
    };
    // A failure other than a syntax error (an unresolvable `import`) means the module form
    // parsed: that is the form the author wrote.
    let module_error = match to_bytecode(&parser, name, source) {
        Ok(bytecode) => return Ok(compiled(bytecode, 0, Shape::Module)),
        Err(ParseFailure::Other(e)) => return Err(e),
        Err(ParseFailure::Syntax { at, message }) => (at, message),
    };
    let body = source::expression_body(source);
    let expression_at = source::to_source_position(body, expression_error.0, prefix);
    let expression_error = if source::past_end(body, expression_error.0) {
        // QuickJS names the wrapper's closing parenthesis, which the author never wrote.
        (
            expression_error.0,
            "unexpected end of the script".to_owned(),
        )
    } else {
        expression_error
    };
    let module_at = source::to_source_position(source, module_error.0, 0);
    let (at, message) = if module_at > expression_at {
        (module_at, module_error.1)
    } else {
        (expression_at, expression_error.1)
    };
    Err(SandboxError::Syntax {
        script: name.to_owned(),
        line: at.line,
        column: at.column,
        message,
    })
}

enum ParseFailure {
    Syntax { at: Position, message: String },
    Other(SandboxError),
}

/// Module bytecode for `text`, or why it does not parse.
fn to_bytecode(parser: &Isolate, name: &str, text: &str) -> Result<Vec<u8>, ParseFailure> {
    let env = parser.env(name, 0);
    parser.context.with(|ctx| {
        let declared = Module::declare(ctx.clone(), name, text).map_err(|e| {
            if !matches!(e, rquickjs::Error::Exception) {
                return ParseFailure::Other(env.explain_js_error(&ctx, e));
            }
            let thrown = ctx.catch();
            let syntax = thrown.as_object().and_then(|obj| {
                let name: String = obj.get("name").ok()?;
                let message: String = obj.get("message").ok()?;
                let stack: String = obj.get("stack").ok()?;
                let at = source::syntax_position(&stack)?;
                (name == "SyntaxError").then_some(ParseFailure::Syntax { at, message })
            });
            syntax.unwrap_or_else(|| ParseFailure::Other(env.explain_thrown(&ctx, thrown)))
        })?;
        declared
            .write(WriteOptions::default())
            .map_err(|e| ParseFailure::Other(env.explain_js_error(&ctx, e)))
    })
}
