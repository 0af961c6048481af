//! One tool call from the command line, under either protocol (decisions 2
//! and 3):
//!
//! - `--schema` / `--describe` print the schema;
//! - ikigai protocol: arguments on stdin; local tools always exit 0, web tools
//!   exit 1 on failure;
//! - shellclaw protocol: arguments in the first argument, stdin never read;
//!   any failure exits 1 and repeats its message as one line on stderr.
//!
//! The answer is one JSON object on stdout, without a trailing newline.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use serde_json::{json, Value};

use crate::args;
use crate::error::ToolError;
use crate::protocol::Protocol;
use crate::tool::{Answer, Env, Family, Tool};

pub fn run(tool: &dyn Tool, argv: &[OsString]) -> ExitCode {
    let mut streams = Streams {
        input: None,
        out: &mut io::stdout().lock(),
        err: &mut io::stderr().lock(),
    };
    ExitCode::from(run_with(tool, argv, &Env::from_process(), &mut streams))
}

/// Where a call's input comes from and its output goes: the process's own
/// stdin, stdout and stderr, or (for the sandbox's worker, which serves
/// many calls) what the caller hands over.
pub struct Streams<'a> {
    /// The arguments' text for the ikigai protocol; None reads stdin.
    pub input: Option<&'a [u8]>,
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

/// `run` with the environment the tool is to see and the streams it uses,
/// returning the exit code.
pub fn run_with(tool: &dyn Tool, argv: &[OsString], env: &Env, streams: &mut Streams) -> u8 {
    let first = argv.first().map(|a| a.to_string_lossy().into_owned());
    let (protocol, input) = match first.as_deref() {
        Some("--schema") | Some("--describe") => {
            write_out(streams.out, tool.schema().trim_end().as_bytes(), true);
            return 0;
        }
        Some("--help") | Some("-h") => {
            write_out(streams.out, usage(tool).as_bytes(), false);
            return 0;
        }
        Some(flag) if flag.starts_with("--") => {
            let err = ToolError::invalid_arg(format!(
                "unknown option '{flag}' (options: --schema, --describe, --help)"
            ));
            // A command-line mistake, like `file-read bogus`: exit 1 and say
            // it on stderr too, not a quiet 0.
            return finish(tool, Protocol::Shellclaw, Err(err), streams);
        }
        Some(_) => (Protocol::Shellclaw, os_bytes(&argv[0])),
        None => match streams.input {
            Some(input) => (Protocol::Ikigai, input.to_vec()),
            None => {
                let mut buf = Vec::new();
                if let Err(e) = io::stdin().read_to_end(&mut buf) {
                    let err =
                        ToolError::invalid_arg(format!("cannot read arguments from stdin: {e}"));
                    return finish(tool, Protocol::Ikigai, Err(err), streams);
                }
                (Protocol::Ikigai, buf)
            }
        },
    };
    let result = call(tool, &input, env);
    finish(tool, protocol, result, streams)
}

/// Writes `bytes` whole; a reader that went away (EPIPE) is not our
/// failure.
fn write_out(out: &mut dyn Write, bytes: &[u8], newline: bool) {
    let _ = out.write_all(bytes);
    if newline {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Parses, validates, executes and fits the answer to the host's cap
/// (`Tool::answer`): the whole call minus the I/O.
pub fn call(tool: &dyn Tool, input: &[u8], env: &Env) -> Result<Answer, ToolError> {
    let raw = args::parse_input(input)?;
    // Parsed once per tool and thread: a worker serves many calls.
    thread_local! {
        static SCHEMAS: std::cell::RefCell<Vec<(&'static str, std::rc::Rc<Value>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let schema = SCHEMAS.with_borrow_mut(|known| {
        if let Some((_, schema)) = known.iter().find(|(name, _)| *name == tool.name()) {
            return schema.clone();
        }
        let schema: std::rc::Rc<Value> = std::rc::Rc::new(
            serde_json::from_str(tool.schema()).expect("tool schemas are valid JSON (tested)"),
        );
        known.push((tool.name(), schema.clone()));
        schema
    });
    let valid = args::validate(&schema, &raw)?;
    tool.answer(&valid, env)
}

/// The JSON a failure answers with, in the tool's family convention.
pub fn error_answer(family: Family, err: &ToolError) -> Value {
    match family {
        Family::Local => json!({"error": err.message, "error_code": err.code.as_str()}),
        Family::Web => {
            json!({"success": false, "error": err.message, "error_code": err.code.as_str()})
        }
    }
}

fn finish(
    tool: &dyn Tool,
    protocol: Protocol,
    result: Result<Answer, ToolError>,
    streams: &mut Streams,
) -> u8 {
    match result {
        Ok(Answer::Value(value)) => {
            print_json(&value, streams.out);
            0
        }
        Ok(Answer::Written(write)) => {
            // A reader that went away (EPIPE) is not our failure.
            let mut out = chunks(streams.out);
            let _ = write(&mut out).and_then(|()| out.flush());
            0
        }
        Err(err) => {
            print_json(&error_answer(tool.family(), &err), streams.out);
            let stderr = &mut streams.err;
            if let Some(event) = &err.event {
                let _ = writeln!(stderr, "{event}");
            }
            if protocol == Protocol::Shellclaw {
                let _ = writeln!(
                    stderr,
                    "{}: {}",
                    tool.name(),
                    err.message.replace('\n', " ")
                );
                return 1;
            }
            match tool.family() {
                Family::Local => 0,
                Family::Web => 1,
            }
        }
    }
}

fn print_json(value: &Value, out: &mut dyn Write) {
    // Straight to stdout through one buffer: a big answer (bash printing
    // gigabytes) is not held a second time as text. Serialising a Value
    // cannot fail (string keys, finite numbers); a reader that went away
    // (EPIPE) is not our failure.
    let mut out = chunks(out);
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.flush();
}

fn chunks(out: &mut dyn Write) -> Chunks<&mut dyn Write> {
    Chunks(Vec::with_capacity(CHUNK + 4096), out)
}

/// Collects the serialiser's many small writes in a Vec (whose
/// extend_from_slice inlines to a copy, where BufWriter's write_all costs
/// half as much time again) and hands them on in chunks.
struct Chunks<W: Write>(Vec<u8>, W);

const CHUNK: usize = 1 << 16;

impl<W: Write> Write for Chunks<W> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        if self.0.len() >= CHUNK {
            self.1.write_all(&self.0)?;
            self.0.clear();
        }
        Ok(buf.len())
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write(buf).map(|_| ())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.1.write_all(&self.0)?;
        self.0.clear();
        self.1.flush()
    }
}

fn os_bytes(arg: &OsString) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    arg.as_os_str().as_bytes().to_vec()
}

fn usage(tool: &dyn Tool) -> String {
    format!(
        "{cmd}: {summary}\n\n\
         usage: {cmd} --schema | --describe   print the tool's JSON schema\n       \
         {cmd} < ARGS.json              arguments on stdin (ikigai protocol)\n       \
         {cmd} 'ARGS_JSON'              arguments as the first argument (shellclaw protocol)\n",
        cmd = tool.command(),
        summary = crate::tool::summary(tool),
    )
}
