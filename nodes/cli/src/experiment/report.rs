//! The results folder's report.html: one self-contained page (plots inlined as SVG, no
//! scripts, no network) with the summary table, the plots, the failed cells with their
//! reasons, the machine's facts and the experiment file itself.

use std::fmt::Write;

use super::file::{Bench, Experiment};
use super::machine::Machine;
use super::results::{summarise, ResultRow};

/// A plot as the report shows it.
pub struct Figure {
    pub svg: String,
    pub png_name: String,
    pub title: String,
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn html(
    exp: &Experiment,
    machine: &Machine,
    rows: &[ResultRow],
    figures: &[Figure],
    interrupted: bool,
) -> String {
    let mut page = String::new();
    let title = format!("convoy experiment: {}", escape(&exp.name));
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;\
         text-align:right}}th{{background:#f3f3f3}}td.l,th.l{{text-align:left}}\
         pre{{background:#f7f7f7;padding:1em;overflow-x:auto}}.failed{{color:#b00}}\
         figure{{margin:1.5em 0}}</style></head><body>\n<h1>{title}</h1>\n"
    );
    let ok = rows.iter().filter(|r| r.ok()).count();
    let failed: Vec<&ResultRow> = rows.iter().filter(|r| !r.ok()).collect();
    let _ = writeln!(
        page,
        "<p>Bench <b>{}</b>, {} result rows, {} failed{}. Measured {} on {} \
         (<a href=\"machine.json\">machine.json</a>). Data: <a href=\"results.csv\">results.csv</a> \
         (one row per observation; medians over repeats below).</p>",
        exp.bench.name(),
        ok,
        failed.len(),
        if interrupted {
            ", <b>interrupted</b> (Ctrl-C): the cells not run are missing"
        } else {
            ""
        },
        escape(&machine.date_utc),
        escape(&machine.hostname)
    );

    page += "<h2>Summary</h2>\n<table><tr><th class=\"l\">series</th>";
    match exp.bench {
        Bench::Latency => {
            page +=
                "<th>size (B)</th><th>p50 µs</th><th>p99 µs</th><th>round trips/s</th><th>lost</th>"
        }
        Bench::Lockstep => page += "<th>agents</th><th>frames/s</th><th>datagrams/frame</th>",
    }
    page += "<th>ok/runs</th></tr>\n";
    let cell = |v: f64| {
        if v.is_finite() {
            format!("{v:.1}")
        } else {
            "–".into()
        }
    };
    for (series, points) in summarise(rows) {
        for p in points {
            let _ = write!(
                page,
                "<tr><td class=\"l\">{}</td><td>{}</td>",
                escape(&series),
                p.x
            );
            match exp.bench {
                Bench::Latency => {
                    let _ = write!(
                        page,
                        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                        cell(p.p50_us),
                        cell(p.p99_us),
                        cell(p.per_s),
                        cell(p.lost)
                    );
                }
                Bench::Lockstep => {
                    let _ = write!(
                        page,
                        "<td>{}</td><td>{}</td>",
                        cell(p.per_s),
                        cell(p.datagrams_per_frame)
                    );
                }
            }
            let runs = p.repeats_ok + p.repeats_failed;
            let class = if p.repeats_failed > 0 {
                " class=\"failed\""
            } else {
                ""
            };
            let _ = writeln!(page, "<td{class}>{}/{runs}</td></tr>", p.repeats_ok);
        }
    }
    page += "</table>\n";

    if !figures.is_empty() {
        page += "<h2>Plots</h2>\n";
    }
    for f in figures {
        let _ = writeln!(
            page,
            "<figure>{}<figcaption>{} (<a href=\"{}\">PNG</a>)</figcaption></figure>",
            strip_xml_declaration(&f.svg),
            escape(&f.title),
            escape(&f.png_name)
        );
    }

    if !failed.is_empty() {
        page += "<h2>Failed cells</h2>\n<table><tr><th class=\"l\">cell</th><th class=\"l\">reason</th></tr>\n";
        for r in failed {
            let _ = writeln!(
                page,
                "<tr><td class=\"l\">{}</td><td class=\"l failed\">{}</td></tr>",
                escape(&r.cell),
                escape(&r.reason)
            );
        }
        page += "</table>\n<p>Each cell's output is in <code>cells/CELL/</code>.</p>\n";
    }

    page += "<h2>Machine</h2>\n<table>\n";
    for (k, v) in machine.facts() {
        let _ = writeln!(
            page,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            escape(k),
            escape(&v)
        );
    }
    page += "</table>\n";
    let _ = writeln!(
        page,
        "<h2>Experiment file</h2>\n<p><code>{}</code> (a copy: <a href=\"experiment.toml\">experiment.toml</a>)</p>\n<pre>{}</pre>",
        escape(&exp.file.display().to_string()),
        escape(&exp.text)
    );
    page += "</body></html>\n";
    page
}

/// An SVG document's text without its `<?xml ...?>` line, to inline it in HTML.
fn strip_xml_declaration(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest
            .find("?>")
            .map_or(svg, |end| rest[end + 2..].trim_start()),
        None => svg,
    }
}
