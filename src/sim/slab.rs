//! A slab: requests live in one vector and are named by index, so the hot
//! path allocates nothing once the slab has grown to the number of I/Os in
//! flight.

pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = Some(v);
            i
        } else {
            self.items.push(Some(v));
            (self.items.len() - 1) as u32
        }
    }

    #[inline]
    pub fn remove(&mut self, i: u32) -> T {
        let v = self.items[i as usize].take().expect("slab: removing a free slot");
        self.free.push(i);
        self.live -= 1;
        v
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        self.items[i as usize].as_ref().expect("slab: reading a free slot")
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("slab: writing a free slot")
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots() {
        let mut s = Slab::new();
        let a = s.insert(1);
        let b = s.insert(2);
        assert_eq!(s.remove(a), 1);
        let c = s.insert(3);
        assert_eq!(c, a);
        assert_eq!(*s.get(b), 2);
        assert_eq!(s.len(), 2);
    }
}
