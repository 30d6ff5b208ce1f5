// Embeds every preset under presets/host and presets/device into the binary,
// so `nvmesim presets` and `--device NAME` work without the source tree.
use std::fs;
use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let mut code = String::new();
    for kind in ["host", "device"] {
        let dir = Path::new(&root).join("presets").join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        code.push_str(&format!(
            "pub static {}_PRESETS: &[(&str, &str)] = &[\n",
            kind.to_uppercase()
        ));
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f.file_stem().unwrap().to_string_lossy().to_string();
            code.push_str(&format!(
                "    ({name:?}, include_str!({:?})),\n",
                f.display().to_string()
            ));
        }
        code.push_str("];\n");
    }
    fs::write(Path::new(&out).join("presets.rs"), code).unwrap();
}
