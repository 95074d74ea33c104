//! Who a bearer credential belongs to.
