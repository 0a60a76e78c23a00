//! rooflab's task runner: `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! The build machine has no GPU and no CUDA install; xtask fetches the two NVIDIA pieces the
//! build needs (see `deps`), hands them to cargo, and runs GPU programs so that they start
//! even without a driver (they then report "no CUDA device" themselves).

mod bench;
mod browser;
mod bundle;
mod deps;
mod explain;
mod lab;
mod ptxas;
mod run_all;
mod sass;
mod test;
mod util;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "rooflab project tasks",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fetch what the build needs (a libcuda to link, ptxas, nvdisasm) and print where it is.
    Deps {
        /// Download again even if cached.
        #[arg(long)]
        refresh: bool,
    },
    /// The full check CI runs: deps, build, ptxas (no spills), sass (tensor cores), tests, clippy.
    Test(test::Args),
    /// Build rooflab-bench (release) and run it; ARGS go to it (default `--out target/rooflab`).
    #[command(disable_help_flag = true)]
    Bench {
        /// Arguments for rooflab-bench (try `--help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build target/bundle/: binaries, PTX and a `run-all` script to ship to the GPU machine.
    Bundle,
    /// One variant on one screen: source header, constants, cost model, ptxas, occupancy, PTX.
    Explain(explain::Args),
    /// The guide's generated tables and plots (docs/generated/, chapter markers) from a bench.json.
    Report {
        /// A bench.json from `cargo xtask bench` / the bundle's run-all.
        results: std::path::PathBuf,
        /// The guide's folder (default: the workspace's docs/).
        #[arg(long)]
        docs: Option<std::path::PathBuf>,
    },
    /// Only step [g] of `test`: the HTML report of a committed run checked in headless
    /// Chromium (needs `cargo build -p rooflab --bin rooflab-bench` first).
    BrowserTest,
    /// One launch of a variant under Nsight Compute, next to the cost model (GPU machine).
    Profile {
        /// `family/variant`, e.g. `memory/v03_vectorized_copy`.
        name: Option<String>,
        #[arg(long)]
        size: Option<String>,
        /// Only check that ncu knows rooflab's metrics on this GPU.
        #[arg(long)]
        check_metrics: bool,
        /// Also print these ncu sections for the same launch (repeatable), e.g.
        /// `--section WarpStateStats`.
        #[arg(long)]
        section: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Deps { refresh } => deps::cmd_deps(refresh).map(|()| ExitCode::SUCCESS),
        Cmd::Test(args) => test::run(&args).map(|ok| {
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }),
        Cmd::Bench { args } => bench::run(&args).map(ExitCode::from),
        Cmd::Bundle => bundle::run().map(|()| ExitCode::SUCCESS),
        Cmd::BrowserTest => browser::run_alone().map(|()| ExitCode::SUCCESS),
        Cmd::Explain(args) => explain::run(&args).map(ExitCode::from),
        Cmd::Report { results, docs } => lab::report(&results, docs.as_deref()).map(ExitCode::from),
        Cmd::Profile {
            name,
            size,
            check_metrics,
            section,
        } => lab::profile(name.as_deref(), size.as_deref(), check_metrics, &section)
            .map(ExitCode::from),
    };
    result.unwrap_or_else(|e| {
        eprintln!("{} {e:#}", util::bad("xtask: error:"));
        ExitCode::FAILURE
    })
}
