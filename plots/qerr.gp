# qerr.gp — runs' quantization error per (layer, GEMM, pass, operand) over
# steps, as heatmaps: one, or a panel per run side by side sharing rows and
# the colour scale. Data and variables: fig_qerr.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
# Widths in inches: block labels, GEMM labels and row labels (1.08), each
# panel (1.64), gaps between panels (0.12), the colour box (0.78).
PW = 1.64
GAP = 0.12
width = 1.08 + npanels * PW + (npanels - 1) * GAP + 0.78
W = width
load plotsdir."/style.gp"

set tmargin at screen 1 - 0.3/height
set bmargin at screen 0.5/height
if (npanels > 1) { set multiplot }

set xlabel "optimizer step" offset 0, 0.3
set xrange [xmin:xmax]
set xtics xtic out
set yrange [nrows-0.5:-0.5]
set ytics scale 0 font ",6.5" noenhanced
set ytics ()
do for [i=1:nrows] { set ytics add (word(rowlabels, i) i-1) }
unset grid
set border 15 lw 0.8
set cbrange [cbmin:cbmax]
set cblabel "log_{10}(relative L2 error)" offset -0.5, 0
set cbtics out scale 0.6
set colorbox user origin screen 1 - 0.70/W, screen 0.5/height size screen 0.1/W, screen 1 - 0.8/height
unset colorbox
# viridis: perceptually uniform, readable in grey and by colour-blind readers
set palette defined (0 "#440154", 1 "#472c7a", 2 "#3b518b", 3 "#2c718e", 4 "#21908d", \
                     5 "#27ad81", 6 "#5cc863", 7 "#aadc32", 8 "#fde725")

# GEMM names left of the row labels, block names (rotated) at the far left
do for [i=1:words(groups)] {
    set label word(groups, i) at screen 0.55/W, first word(gpos, i)+0 right font ",7" noenhanced
}
do for [i=1:words(layers)] {
    set label word(layers, i) at screen 0.12/W, first word(lpos, i)+0 center rotate by 90 font ",8" noenhanced
}
# white lines between GEMMs, thicker between blocks
do for [b in gbreaks] {
    set arrow from graph 0, first b+0 to graph 1, first b+0 nohead lc rgb "white" lw 0.7 front
}
do for [b in lbreaks] {
    set arrow from graph 0, first b+0 to graph 1, first b+0 nohead lc rgb "white" lw 2.5 front
    set arrow from screen 0.05/W, first b+0 to graph 0, first b+0 nohead lc rgb "#999999" lw 0.4 back
}
if (nexact > 0) {
    set label "blank: exact (error 0)" at screen 1 - 0.05/W, screen 0.12/height right font ",7"
}

do for [p=1:npanels] {
    set lmargin at screen (1.08 + (p-1)*(PW+GAP))/W
    set rmargin at screen (1.08 + (p-1)*(PW+GAP) + PW)/W
    set title (npanels > 1 ? word(titles, p) : title) noenhanced offset 0, -0.4
    if (p == npanels) { set colorbox }
    if (p == 2) {
        # the labels and lines left of the map belong to the first panel
        unset label
        unset arrow
        set ytics ()
        do for [i=1:nrows] { set ytics add ("" i-1) }
        do for [b in gbreaks] {
            set arrow from graph 0, first b+0 to graph 1, first b+0 nohead lc rgb "white" lw 0.7 front
        }
        do for [b in lbreaks] {
            set arrow from graph 0, first b+0 to graph 1, first b+0 nohead lc rgb "white" lw 2.5 front
        }
        if (nexact > 0) {
            set label "blank: exact (error 0)" at screen 1 - 0.05/W, screen 0.12/height right font ",7"
        }
    }
    if (word(bf16n, p) + 0 > 0) {
        # rows the recipe keeps in BF16: veiled, and said so
        plot datafile index p-1 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc palette notitle, \
             '' index npanels+p-1 using (($1+$2)/2):(($3+$4)/2):1:2:3:4 with boxxyerror fs transparent solid 0.75 noborder lc rgb "white" notitle, \
             '' index npanels+p-1 using (($1+$2)/2):($3 + 0.4*($4-$3)):("kept in BF16\nby the recipe") with labels font ",8" tc rgb "#222222" notitle
    } else {
        plot datafile index p-1 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc palette notitle
    }
}
if (npanels > 1) { unset multiplot }
