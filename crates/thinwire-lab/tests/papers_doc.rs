//! `docs/results/papers.md` lists the same published figures as the code: every
//! `[[published]]` entry of every paper scenario and every figure of the gateway
//! reproductions, none missing and none left over (a figure added, renamed or dropped
//! without regenerating the document fails here).

use std::collections::BTreeSet;
use std::time::Duration;

use thinwire_lab::gateway::{run_gateway_lab, GatewayLabOptions};
use thinwire_lab::paper::figure_rows_of_markdown;
use thinwire_lab::scenario::{Scenario, BUILTIN};

const DOC: &str = include_str!("../../../docs/results/papers.md");

/// (scenario or reproduction, figure) of every published figure the code has.
fn figures_in_code() -> BTreeSet<(String, String)> {
    let mut want = BTreeSet::new();
    for (name, _) in BUILTIN {
        let scn = Scenario::load(name).expect("built-in scenario");
        if scn.paper.info.is_none() {
            continue;
        }
        for p in &scn.paper.published {
            want.insert((name.to_string(), p.what.clone()));
        }
    }
    // The gateway reproductions name their figures whatever the run's length.
    let mut gw = GatewayLabOptions::default();
    gw.ao.duration = Duration::from_secs(2);
    gw.tcm.duration = Duration::from_secs(2);
    for section in run_gateway_lab(&gw).sections() {
        for f in section.figures {
            want.insert((section.name.to_owned(), f.what));
        }
    }
    want
}

#[test]
fn the_results_document_lists_every_published_figure() {
    let rows = figure_rows_of_markdown(DOC);
    let listed: BTreeSet<(String, String)> = rows.iter().cloned().collect();
    assert_eq!(listed.len(), rows.len(), "a figure is listed twice");
    let want = figures_in_code();
    let missing: Vec<_> = want.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/results/papers.md is out of date (regenerate it with the command it names).\n\
         in the code, not in the document: {missing:#?}\nin the document, not in the code: {extra:#?}"
    );
}
