/* The headers the checked-in bindings (src/sys.rs) and the layout test use. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
