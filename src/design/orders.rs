//! Systematic orders for a session's `orders` cells (`perturb::orders`):
//! the test list from a collection run (one run of the cell in the
//! runner's own order, recorded as part of the session), the orders built
//! from it and written into the store, and each orders cell's runs taking
//! them in turn through the recipe's `[ordered]` mode.

use crate::catalog::recipe::ordered::OrderHow;
use crate::error::{Error, Result};
use crate::perturb::orders;
use crate::session::{self, SessionSpec};

/// The stop signal the collection run watches.
type StopRx = tokio::sync::watch::Receiver<crate::exec::child::Stop>;

/// The cells of `spec` that run systematic orders.
pub(crate) fn cells(spec: &SessionSpec) -> Vec<String> {
    (spec.cells.iter())
        .filter(|(_, p)| p.orders)
        .map(|(c, _)| c.name.clone())
        .collect()
}

/// `spec` with each of `cells`' runs taking one of the systematic orders of
/// `tests` in turn (written into the store under `name`), its shuffle off
/// and the recipe's plugin on its `PYTHONPATH`; and how many orders.
pub(crate) fn with_orders(
    mut spec: SessionSpec,
    cells: &[String],
    tests: &[String],
    name: &str,
) -> Result<(SessionSpec, usize)> {
    let ordered = crate::bisect::can_order(spec.recipe.as_ref())
        .cloned()
        .map_err(|e| Error::harness(e, "report this as a bug"))?;
    let built = orders::cover(tests);
    let mut commands = Vec::with_capacity(built.len());
    for (i, list) in built.iter().enumerate() {
        let file = spec.store.write_bisect_order(name, i as u32, list)?;
        commands.push(
            (ordered.argv(&spec.command, &file.display().to_string()))
                .map_err(|e| Error::usage(e, "fix the recipe's [ordered] section"))?,
        );
    }
    let plugin = match ordered.how {
        OrderHow::PytestPlugin => Some(spec.store.write_bisect_plugin()?),
        _ => None,
    };
    let modules = {
        let mut m: Vec<&str> = tests.iter().map(|t| orders::module_of(t)).collect();
        m.sort_unstable();
        m.dedup();
        m.len()
    };
    let note = format!(
        "orders: {}; run r takes order r mod {}",
        orders::describe(tests.len(), modules, built.len()),
        built.len()
    );
    let inherited = std::env::var("PYTHONPATH").ok();
    for (c, prepared) in &mut spec.cells {
        if !cells.contains(&c.name) {
            continue;
        }
        prepared.shuffle = false;
        if !prepared.notes.contains(&note) {
            prepared.notes.push(note.clone());
        }
        // Only the orders cells load the plugin: the other cells' runs
        // are left as they were.
        if let Some(dir) = &plugin {
            let prior = (prepared.set.get("PYTHONPATH").cloned())
                .or(inherited.clone())
                .filter(|p| !p.is_empty());
            let path = match prior {
                Some(p) => format!("{}:{p}", dir.display()),
                None => dir.display().to_string(),
            };
            prepared.set.insert("PYTHONPATH".into(), path);
        }
    }
    for c in cells {
        spec = spec.with_cell_orders(c, commands.clone());
    }
    Ok((spec, built.len()))
}

/// `spec` ready to run its orders cells (unchanged without one): a
/// collection run of the first orders cell in the runner's own order,
/// recorded as part of the session, gives the tests. `None` when stopped.
pub(crate) async fn systematic(spec: SessionSpec, stop: &StopRx) -> Result<Option<SessionSpec>> {
    let cells = cells(&spec);
    let Some(first) = cells.first() else {
        return Ok(Some(spec));
    };
    let id = match (&spec.sharding, &spec.named) {
        (Some(s), _) => s.session_id.clone(),
        (_, Some(id)) => id.clone(),
        _ => session::engine::new_session_id(),
    };
    let spec = match spec.sharding.is_some() || spec.named.is_some() {
        true => spec,
        false => spec.named(&id),
    };
    let mut collect = (spec.clone().only_cells(&[first.as_str()])?)
        .with_runs(1)
        .sharded(None)
        .part_of(&id);
    collect.named = None;
    eprintln!("flakelab: collecting the tests for the systematic orders (one run of `{first}` in the runner's own order)");
    let Some(done) = session::run_session(&collect, stop).await? else {
        return Ok(None);
    };
    if done.interrupted {
        return Ok(None);
    }
    let (runs, _) = done.runs(&collect.store)?;
    let tests = runs
        .first()
        .map(crate::bisect::order_of)
        .unwrap_or_default();
    if tests.is_empty() {
        let why = format!(
            "the collection run of `{first}` reported no tests (session {}): there is nothing to build its orders from",
            done.session.id
        );
        let rest: Vec<String> = (spec.cells.iter())
            .map(|(c, _)| c.name.clone())
            .filter(|n| !cells.contains(n))
            .collect();
        if rest.len() < 2 {
            return Err(Error::usage(
                why,
                "check that the command runs tests and writes a report (`flakelab report` on that session)",
            ));
        }
        // Beside other cells (a matrix), the orders cells are left out and
        // said so; the other cells still run.
        let names: Vec<&str> = rest.iter().map(String::as_str).collect();
        let mut spec = spec.only_cells(&names)?;
        for c in &cells {
            spec.left_out.push((c.clone(), why.clone()));
        }
        eprintln!("flakelab: {why}; the orders cells are left out");
        return Ok(Some(spec));
    }
    let name = format!("orders-{id}");
    let (spec, count) = with_orders(spec, &cells, &tests, &name)?;
    if spec.runs < count as u32 {
        eprintln!(
            "flakelab: {} runs per cell take {} of the {count} systematic orders: every adjacent pair is covered only with -n {count} or more",
            spec.runs, spec.runs
        );
    } else {
        eprintln!(
            "flakelab: {count} systematic orders of {} tests",
            tests.len()
        );
    }
    Ok(Some(spec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::testing;

    fn junit(ids: &[&str]) -> String {
        let cases: String = ids
            .iter()
            .map(|id| {
                let (class, name) = id.split_once("::").unwrap();
                format!("<testcase classname='{class}' name='{name}'/>")
            })
            .collect();
        format!("<testsuite name='s'>{cases}</testsuite>")
    }

    #[test]
    fn a_seed_only_runner_runs_its_shuffle_by_hand_and_a_matrix_leaves_the_cell_out() {
        let dir = tempfile::tempdir().unwrap();
        let executor = testing::fake(dir.path(), "version = \"go version go1.22.0\"\n");
        let by_hand = testing::spec(
            dir.path(),
            &executor,
            &["go", "test", "./..."],
            &["orders"],
            1,
        );
        let (_, prepared) = &by_hand.cells[by_hand.cell_index("orders").unwrap()];
        assert!(prepared.shuffle && !prepared.orders);
        assert!(cells(&by_hand).is_empty());
        let mut intent = crate::session::resolve::Intent {
            command: vec!["go".into(), "test".into(), "./...".into()],
            dir: Some(dir.path().to_path_buf()),
            seed: Some(1),
            ..Default::default()
        };
        intent.flags.matrix = Some(vec!["standard".into()]);
        let matrix = crate::session::resolve::resolve(
            intent,
            &crate::session::resolve::Layers::none(),
            &executor,
        )
        .unwrap();
        assert!(matrix.cell_index("systematic-orders").is_none());
        let (_, why) = (matrix.left_out.iter())
            .find(|(c, _)| c == "systematic-orders")
            .expect("left out");
        assert!(why.contains("can only shuffle by seed"), "{why}");
    }

    #[test]
    fn an_orders_cell_runs_each_systematic_order_from_the_collected_tests() {
        let dir = tempfile::tempdir().unwrap();
        let tests = ["t.a::x", "t.a::y", "t.a::z", "t.b::w"];
        let script = format!(
            "version = \"pytest 9.2.0\"\n[[run]]\njunit = \"{}\"\n",
            junit(&tests)
        );
        let executor = testing::fake(dir.path(), &script);
        let spec = testing::spec(dir.path(), &executor, &["pytest", "t"], &["orders"], 4);
        assert_eq!(cells(&spec), ["orders"]);
        let ready = testing::run(|stop| async move { systematic(spec, &stop).await })
            .unwrap()
            .unwrap();
        let commands = &ready.cell_orders["orders"];
        // max(w(3) = 4, w(2 modules) = 2) = 4 orders.
        assert_eq!(commands.len(), 4);
        let lists: Vec<Vec<String>> = commands
            .iter()
            .map(|argv| {
                let file = argv
                    .iter()
                    .find_map(|a| a.strip_prefix("--flakelab-order="))
                    .unwrap();
                std::fs::read_to_string(file)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        let want: Vec<String> = tests.iter().map(|t| t.to_string()).collect();
        assert_eq!(lists, orders::cover(&want));
        let (_, prepared) = &ready.cells[ready.cell_index("orders").unwrap()];
        assert!(
            prepared.set["PYTHONPATH"].contains("bisect"),
            "{prepared:?}"
        );
        let (_, base) = &ready.cells[ready.cell_index("baseline").unwrap()];
        assert!(!base.set.contains_key("PYTHONPATH"));
        // The collection run is part of the session the spec is named.
        let (sessions, _) = ready.store.load_sessions().unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].part_of.as_deref(), ready.named.as_deref());
    }
}
