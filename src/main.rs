fn main() {
    println!("nvmesim: under construction");
}
