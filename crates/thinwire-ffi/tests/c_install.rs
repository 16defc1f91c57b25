//! `tools/install-c.sh` into a temporary DESTDIR, then `examples/c/error_paths.c` built
//! against the installed tree, through pkg-config and through CMake's `find_package`, and run:
//! the layout, the SONAME the programs look for, and both package files are checked.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::{c_example, library_dir, repo_root, run_ok, scratch, wait_bounded};

/// The SONAME build.rs gives the library: the major version, or `0.minor` before 1.0.
fn expected_soname() -> String {
    match env!("CARGO_PKG_VERSION_MAJOR") {
        "0" => format!("libthinwire.so.0.{}", env!("CARGO_PKG_VERSION_MINOR")),
        major => format!("libthinwire.so.{major}"),
    }
}

/// The shared libraries `binary` asks the dynamic linker for, and its SONAME if any.
fn dynamic_section(binary: &Path) -> String {
    let out = run_ok(Command::new("readelf").arg("-d").arg(binary), "readelf");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `exe` (error_paths) with `env` set, bounded in time, and checks that every check passed.
fn passes(exe: &Path, env: &[(&str, &Path)], what: &str) {
    let mut cmd = Command::new(exe);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = wait_bounded(cmd.spawn().expect("run"), Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where the test installs: `$DESTDIR$PREFIX`.
struct Install {
    /// DESTDIR, which pkg-config is told stands for `/`.
    stage: PathBuf,
    /// `$DESTDIR$PREFIX`.
    tree: PathBuf,
}

/// Runs the install script from `lib` into `dir/stage` for PREFIX /opt/thinwire and checks
/// the layout, the symlinks and what the script printed.
fn install(lib: &Path, dir: &Path) -> Install {
    let stage = dir.join("stage");
    let tree = stage.join("opt/thinwire");
    let out = run_ok(
        Command::new(repo_root().join("tools/install-c.sh"))
            .arg("--lib-dir")
            .arg(lib)
            .arg("/opt/thinwire")
            .env("DESTDIR", &stage),
        "install-c.sh",
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("ldconfig") && said.contains("-Wl,-rpath,/opt/thinwire/lib"),
        "install-c.sh printed no run-time path guidance: {said}"
    );
    let soname = expected_soname();
    assert!(
        dynamic_section(&lib.join("libthinwire_ffi.so"))
            .contains(&format!("Library soname: [{soname}]")),
        "the built library's SONAME is not {soname}"
    );
    let version = env!("CARGO_PKG_VERSION");
    for (link, target) in [
        ("libthinwire.so".to_owned(), soname.clone()),
        (soname.clone(), format!("libthinwire.so.{version}")),
    ] {
        let read = std::fs::read_link(tree.join("lib").join(&link));
        assert_eq!(read.ok(), Some(target.into()), "symlink lib/{link}");
    }
    for file in [
        "include/thinwire.h",
        "lib/libthinwire.a",
        "lib/pkgconfig/thinwire.pc",
        "lib/cmake/thinwire/thinwireConfig.cmake",
        "lib/cmake/thinwire/thinwireConfigVersion.cmake",
    ] {
        assert!(tree.join(file).is_file(), "{file} not installed");
    }
    let pc = std::fs::read_to_string(tree.join("lib/pkgconfig/thinwire.pc")).unwrap();
    assert!(
        pc.contains("prefix=/opt/thinwire\n") && pc.contains(&format!("Version: {version}\n")),
        "thinwire.pc: {pc}"
    );
    Install { stage, tree }
}

/// Builds error_paths with `cc $(pkg-config --cflags --libs thinwire)` and runs it with
/// LD_LIBRARY_PATH.
fn pkg_config_build(at: &Install, dir: &Path) {
    let flags = run_ok(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "thinwire"])
            .env("PKG_CONFIG_PATH", at.tree.join("lib/pkgconfig"))
            .env("PKG_CONFIG_SYSROOT_DIR", &at.stage),
        "pkg-config",
    );
    let flags = String::from_utf8(flags.stdout).unwrap();
    let exe = dir.join("error_paths_pkg_config");
    run_ok(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
            .arg(c_example("error_paths"))
            .args(flags.split_whitespace())
            .arg("-o")
            .arg(&exe),
        "cc with pkg-config",
    );
    let soname = expected_soname();
    assert!(
        dynamic_section(&exe).contains(&format!("Shared library: [{soname}]")),
        "the program does not ask for {soname}"
    );
    passes(
        &exe,
        &[("LD_LIBRARY_PATH", &at.tree.join("lib"))],
        "with pkg-config",
    );
}

/// Builds error_paths with CMake's `find_package(thinwire VERSION)`, against the shared
/// library (found through the build tree's RPATH) and the static one, and runs both.
fn cmake_build(at: &Install, dir: &Path) {
    let project = dir.join("cmake");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\n\
             project(uses_thinwire C)\n\
             find_package(thinwire {version} REQUIRED)\n\
             add_executable(shared \"{src}\")\n\
             target_link_libraries(shared PRIVATE thinwire::thinwire)\n\
             add_executable(static \"{src}\")\n\
             target_link_libraries(static PRIVATE thinwire::thinwire_static)\n",
            version = env!("CARGO_PKG_VERSION"),
            src = c_example("error_paths").display()
        ),
    )
    .unwrap();
    let build = dir.join("cmake-build");
    run_ok(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", at.tree.display())),
        "cmake configure (is cmake installed?)",
    );
    run_ok(
        Command::new("cmake").arg("--build").arg(&build),
        "cmake --build",
    );
    let soname = expected_soname();
    assert!(dynamic_section(&build.join("shared")).contains(&format!("Shared library: [{soname}]")));
    assert!(!dynamic_section(&build.join("static")).contains("libthinwire"));
    passes(&build.join("shared"), &[], "with CMake, shared");
    passes(&build.join("static"), &[], "with CMake, static");
}

#[test]
fn the_installed_library_builds_and_runs_c_programs() {
    let lib = library_dir();
    let dir = scratch("install");
    let installed = install(&lib, &dir);
    pkg_config_build(&installed, &dir);
    cmake_build(&installed, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}
