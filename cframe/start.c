/* start.c: pyframe_hook_init, which the Cython layer calls at import.
 *
 * It hands each layer what it needs from the layers above and from the
 * Cython layer: the cache its owners' on_drop notifier and the calls that
 * put the user's Python out of the hook's and tracers' sight, the hook its
 * PEP 523 function and the Cython layer's types and sentinels.  (The
 * specialization mode registers its listeners itself while it is on.)
 *
 * The top layer, beside eval_frame.c.
 */
#include "eval_frame.h"

int
pyframe_hook_init(const pyframe_layer *layer)
{
    if (hook_init(pyframe_eval_frame, layer) < 0) {
        return -1;
    }
    return cache_init(layer->notify_dropped, &hook_user_python);
}
